package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// listedCatalog returns the catalog that run's tool listing (activity
// "tools") recorded.
func listedCatalog(t *testing.T, srv *testenv.Server, runID string) activities.Catalog {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var listing int64
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityId() == "tools" {
			listing = e.GetEventId()
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && listing != 0 && a.GetScheduledEventId() == listing {
			var c activities.Catalog
			if err := testenv.SuiteConverter(t).FromPayloads(a.GetResult(), &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatalf("%s recorded no tool listing", runID)
	return activities.Catalog{}
}

// completeListing waits until a worker holds run's tool listing
// (AGENTRUN_TEST_HOLD_LIST), then completes it by hand with cat, as anyone
// with rights on the namespace can: temporal activity complete.
func (f *fleet) completeListing(t *testing.T, run string, cat activities.Catalog) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, run+"'s tool listing to be held", func() bool {
		desc, err := f.srv.Describe(t, run)
		if err != nil {
			return false
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityId() == "tools" && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	})
	b, err := json.Marshal(cat)
	if err != nil {
		t.Fatal(err)
	}
	f.temporal(t, "activity", "complete", "--activity-id", "tools", "--workflow-id", run, "--result", string(b))
}

// withApproval is cat with tool name's approval set to approval.
func withApproval(t *testing.T, cat activities.Catalog, name, approval string) activities.Catalog {
	t.Helper()
	cat.Tools = slices.Clone(cat.Tools)
	i := slices.IndexFunc(cat.Tools, func(s agent.ToolSpec) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("the catalog lists no %s: %+v", name, cat.Tools)
	}
	cat.Tools[i].Approval = approval
	return cat
}

// honestCatalogs runs a run of env's worker to its approval and returns
// the catalogs its tool listings recorded: the run's, and its child's when
// child is not "". The worker is stopped then.
func (f *fleet) honestCatalogs(t *testing.T, env []string, run, child, prompt string) (activities.Catalog, activities.Catalog) {
	t.Helper()
	w := testenv.Start(t, env, testenv.Program(t, "worker"))
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, f.srv, run, "AwaitingApproval", time.Minute)
	var childCat activities.Catalog
	if child != "" {
		childCat = listedCatalog(t, f.srv, child)
	}
	cat := listedCatalog(t, f.srv, run)
	w.Stop(10 * time.Second)
	return cat, childCat
}

// TestForgedToolListRefused: the worker holds a run's tool listing, and
// someone with rights on the namespace completes it by hand with a catalog
// of their own: the worker's own but for create_ticket, which it says
// needs no approval. The first model step refuses the run's tool list (the
// run fails naming create_ticket and its approval), and no ticket is
// filed. A catalog without a tools key (a model step with none offers
// the worker's tools) fails the run before any step.
func TestForgedToolListRefused(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	own, _ := f.honestCatalogs(t, f.env(), "e2e-list-honest", "", prompt)
	if own.ToolsKey == "" {
		t.Fatalf("the honest listing has no tools key: %+v", own)
	}
	testenv.Start(t, f.env("AGENTRUN_TEST_HOLD_LIST=1"), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter")
	for _, tc := range []struct {
		name string
		cat  activities.Catalog
		want string
		// ran are the activities the run may schedule: the listing, and
		// the model step that refuses the list.
		ran []string
	}{
		{"approval never", withApproval(t, own, "create_ticket", agent.ApprovalNever),
			`tool create_ticket: approval "never" in the run's list, "" in this worker's`, []string{"tools", "llm/1"}},
		{"no tools key", func() activities.Catalog {
			c := withApproval(t, own, "create_ticket", agent.ApprovalNever)
			c.ToolsKey = ""
			return c
		}(), `the run's tool listing returned a catalog no worker lists: its tools key "" is not a content key`, []string{"tools"}},
	} {
		run := "e2e-list-" + strings.ReplaceAll(tc.name, " ", "-")
		if code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, prompt); code != 0 {
			t.Fatalf("%s: starter: exit %d\n%s", tc.name, code, out)
		}
		f.completeListing(t, run, tc.cat)
		var st workflows.State
		testenv.WaitFor(t, time.Minute, run+" to fail, or a ticket to be filed", func() bool {
			s, err := state(t, srv, run)
			st = s
			return err == nil && s.Status.Terminal() || f.ticketCount(t) > 0
		})
		t.Logf("%s: %s", tc.name, st.Reason)
		if st.Status != agent.StatusFailed || !strings.Contains(st.Reason, tc.want) || strings.Contains(st.Reason, "\n") {
			t.Errorf("%s: %s, reason %q; want Failed, one line with %q", tc.name, st.Status, st.Reason, tc.want)
		}
		chain := runChain(t, srv, run)
		if got := chain[len(chain)-1].activities; !slices.Equal(got, tc.ran) {
			t.Errorf("%s: activities %v, want %v", tc.name, got, tc.ran)
		}
		if n := f.ticketCount(t); n != 0 {
			t.Fatalf("%s: tickets: %d, want 0", tc.name, n)
		}
		replayHistory(t, f, run)
	}
}

// TestForgedAgentListRefused: the same for a child run's tool listing. The
// planner's listing is completed by hand with the worker's own catalog,
// the filer child's with the worker's own but for create_ticket, which it
// says needs no approval: the child's first model step refuses it, the
// child fails naming create_ticket and its approval, the planner's model
// reads that failure, and no ticket is filed.
func TestForgedAgentListRefused(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(subAgentFixture(t, t.TempDir(), nil, nil)...)
	const honest, run = "e2e-agentlist-honest", "e2e-agentlist"
	planner, filer := f.honestCatalogs(t, env, honest, agent.ChildRunID(honest, "tool/1/0/filer"), "plan the access request")
	if filer.Agent != "filer" || filer.ToolsKey == "" {
		t.Fatalf("the honest filer listing: %+v", filer)
	}
	testenv.Start(t, append(env, "AGENTRUN_TEST_HOLD_LIST=1"), testenv.Program(t, "worker"))
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "plan the access request"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	f.completeListing(t, run, planner)
	child := agent.ChildRunID(run, "tool/1/0/filer")
	f.completeListing(t, child, withApproval(t, filer, "create_ticket", agent.ApprovalNever))
	var st workflows.State
	testenv.WaitFor(t, time.Minute, child+" to fail, or a ticket to be filed", func() bool {
		s, err := state(t, srv, child)
		st = s
		return err == nil && s.Status.Terminal() || f.ticketCount(t) > 0
	})
	if st.Status != agent.StatusFailed {
		t.Errorf("the child is %s, want Failed", st.Status)
	}
	t.Logf("the child: %s", st.Reason)
	want := `tool create_ticket: approval "never" in the run's list, "" in this worker's`
	if !strings.Contains(st.Reason, want) {
		t.Errorf("the child's reason %q, want %q", st.Reason, want)
	}
	chain := runChain(t, srv, child)
	if got := chain[len(chain)-1].activities; !slices.Equal(got, []string{"tools", "llm/1"}) {
		t.Errorf("the child's activities %v, want the listing and the refused llm/1", got)
	}
	pst := waitStatus(t, srv, run, "Completed", time.Minute)
	if !strings.Contains(pst.Answer, "The filer failed") {
		t.Errorf("the planner's answer %q, want the filer's failure", pst.Answer)
	}
	if n := f.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
}
