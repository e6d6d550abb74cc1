package activities_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// listed is the catalog acts list, through the activity.
func listed(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activities.Activities) activities.Catalog {
	t.Helper()
	v, err := env.ExecuteActivity(acts.ListTools)
	if err != nil {
		t.Fatal(err)
	}
	var cat activities.Catalog
	if err := v.Get(&cat); err != nil {
		t.Fatal(err)
	}
	return cat
}

// edited is cat with tool name's spec changed by edit.
func edited(cat activities.Catalog, name string, edit func(*agent.ToolSpec)) activities.Catalog {
	cat.Tools = slices.Clone(cat.Tools)
	for i := range cat.Tools {
		if cat.Tools[i].Name == name {
			edit(&cat.Tools[i])
		}
	}
	return cat
}

// TestStepsBoundToTheWorkersCatalog: a model step and a tool step carry
// the key of the run's catalog (and a tool step of builds before this one
// the called tool's spec); the worker runs them when they are its own, and
// refuses with the non-retryable StepRefused, naming the tool and the
// field, when the run's list says a write needs no approval, or anything
// else differs. A model
// step's refusal carries the worker's own binding, from which the run
// names the difference. Steps that carry none (scheduled before) run as
// before.
func TestStepsBoundToTheWorkersCatalog(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	acts, tickets := slowDemo(t, 0, 0)
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	own := listed(t, env, acts)
	rec := &offeredTools{Provider: acts.Exec.Model}
	acts.Exec.Model = rec
	model := func(cat activities.Catalog) activities.StepInput {
		return activities.StepInput{Step: agent.Step{Name: "llm/1", Kind: agent.KindModel,
			Model: &agent.ModelInput{New: agent.UserMessages(hand.Prompt), Tools: cat.ToolsKey}}, Catalog: cat.Binding().Key()}
	}
	ticket := func(cat activities.Catalog) activities.StepInput {
		in := toolStep("create_ticket", agent.KindWrite, `{"title":"t","body":"b"}`)
		in.Catalog = cat.Binding().Key()
		for _, s := range cat.Tools {
			if s.Name == "create_ticket" {
				in.Spec = &s
			}
		}
		return in
	}
	refusal := func(t *testing.T, err error, want string) *temporal.ApplicationError {
		t.Helper()
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeRefused || !appErr.NonRetryable() || !strings.Contains(appErr.Message(), want) || strings.Contains(appErr.Message(), "\n") {
			t.Fatalf("the step = %v, want non-retryable %s, one line with %q", err, activities.ErrTypeRefused, want)
		}
		return appErr
	}

	// The worker's own catalog runs; so do steps that carry none.
	if _, err := env.ExecuteActivity(acts.CallModel, model(own)); err != nil {
		t.Fatalf("model step of the worker's own catalog: %v", err)
	}
	if _, err := env.ExecuteActivity(acts.CallTool, ticket(own)); err != nil {
		t.Fatalf("tool step of the worker's own catalog: %v", err)
	}
	legacy := model(own)
	legacy.Catalog, legacy.Step.Model.Tools = "", ""
	if _, err := env.ExecuteActivity(acts.CallModel, legacy); err != nil {
		t.Fatalf("model step without a catalog key or a tools key: %v", err)
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}

	never := edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Approval = agent.ApprovalNever })
	_, err := env.ExecuteActivity(acts.CallModel, model(never))
	appErr := refusal(t, err, "step llm/1 runs with a tool list that is not this worker's (key "+never.Binding().Key())
	var details activities.Binding
	if err := appErr.Details(&details); err != nil || details.ToolsKey != own.ToolsKey {
		t.Fatalf("the refusal's details: %+v (%v), want the worker's binding", details, err)
	}
	if d := never.Binding().Diff(details); d != `tool create_ticket: approval "never" in the run's list, "" in this worker's` {
		t.Fatalf("the difference the run names: %q", d)
	}
	_, err = env.ExecuteActivity(acts.CallTool, ticket(never))
	refusal(t, err, `step tool/1/0/create_ticket calls tool create_ticket with a spec that is not this worker's: approval "never" in the run's list, "" in this worker's`)

	// A model step of a bound catalog may leave its tools key out (the
	// catalog's key covers it): the worker's own catalog runs, offering
	// the model the worker's own specs; another is refused all the same.
	noKey := model(own)
	noKey.Step.Model.Tools = ""
	if _, err := env.ExecuteActivity(acts.CallModel, noKey); err != nil {
		t.Fatalf("model step of the worker's own catalog without its tools key: %v", err)
	}
	if got := rec.offered(); len(got) != 3 || !slices.Equal(got[2], got[0]) || len(got[0]) != len(own.Tools) {
		t.Fatalf("tools offered to the model, by request: %q; want the worker's %d in each", got, len(own.Tools))
	}
	noKey = model(never)
	noKey.Step.Model.Tools = ""
	_, err = env.ExecuteActivity(acts.CallModel, noKey)
	refusal(t, err, "step llm/1 runs with a tool list that is not this worker's (key "+never.Binding().Key())

	// Each field of a spec, and the list as a whole.
	for _, tc := range []struct {
		name string
		cat  activities.Catalog
		want string
	}{
		{"kind", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Kind = agent.KindRead }), `kind "read" in the run's list, "write" in this worker's`},
		{"approval timeout", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.ApprovalTimeout = time.Millisecond }), `approval_timeout 1ms in the run's list, 0s in this worker's`},
		{"idempotent", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Idempotent = true }), `idempotent true in the run's list, false in this worker's`},
		{"idempotency key", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.IdempotencyKey = "title" }), `idempotency_key "title" in the run's list, "" in this worker's`},
		{"probe", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Probe = &agent.Probe{Tool: "lookup"} }), `probe by "lookup" in the run's list, none in this worker's`},
		{"agent", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Agent = true }), `agent true in the run's list, false in this worker's`},
		{"deny", edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Approval = agent.ApprovalDeny }), `approval "deny" in the run's list, "" in this worker's`},
	} {
		// The step itself is the worker's (a write, not idempotent, not
		// settled): the spec it carries alone differs.
		_, err := env.ExecuteActivity(acts.CallTool, ticket(tc.cat))
		refusal(t, err, "create_ticket with a spec that is not this worker's: "+tc.want)
		if d := tc.cat.Binding().Diff(own.Binding()); d != "tool create_ticket: "+tc.want {
			t.Errorf("%s: Diff = %q, want the tool and %q", tc.name, d, tc.want)
		}
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("%d tickets after the refusals, want still 1", n)
	}

	// The form a run schedules now: the catalog's key and no spec, which
	// the key covers (every field of every tool).
	for _, tc := range []activities.Catalog{never, edited(own, "create_ticket", func(s *agent.ToolSpec) { s.Kind = agent.KindRead })} {
		in := ticket(tc)
		in.Spec = nil
		_, err := env.ExecuteActivity(acts.CallTool, in)
		refusal(t, err, "step tool/1/0/create_ticket runs with a tool list that is not this worker's (key "+tc.Binding().Key())
	}
	in := ticket(own)
	in.Step.Name, in.Spec = "tool/2/0/create_ticket", nil // a new step: tool/1/0's result is journalled
	if _, err := env.ExecuteActivity(acts.CallTool, in); err != nil {
		t.Fatalf("tool step of the worker's own catalog, no spec: %v", err)
	}
	if n := testenv.TicketCount(t, tickets); n != 2 {
		t.Fatalf("%d tickets, want 2: the refused steps filed none", n)
	}
}

// TestBindingDiff: what the run names when its list is not the worker's.
func TestBindingDiff(t *testing.T) {
	t.Parallel()
	own := activities.Binding{ToolsKey: "sha256:a", Tools: []agent.ToolSpec{{Name: "lookup", Kind: agent.KindRead}, {Name: "create_ticket", Kind: agent.KindWrite}}}
	with := func(edit func(*activities.Binding)) activities.Binding {
		b := own
		b.Tools = slices.Clone(own.Tools)
		edit(&b)
		return b
	}
	for _, tc := range []struct {
		run  activities.Binding
		want string
	}{
		{own, ""},
		{with(func(b *activities.Binding) { b.Tools = nil }), "this worker's tool lookup is not in the run's list"},
		{with(func(b *activities.Binding) { b.Tools = b.Tools[1:] }), "this worker's tool lookup is not in the run's list"},
		{with(func(b *activities.Binding) { b.ToolsKey = "" }), `tools key "" in the run's list, "sha256:a" in this worker's`},
		{with(func(b *activities.Binding) { b.Agent = "filer" }), `agent "filer" in the run's list, "" in this worker's`},
		{with(func(b *activities.Binding) { b.System = "obey" }), "agent 's system prompt differs (4 bytes in the run's list, 0 in this worker's)"},
		{with(func(b *activities.Binding) {
			b.Tools = append(b.Tools, agent.ToolSpec{Name: "drop_database", Kind: agent.KindRead})
		}), `tool "drop_database" is in the run's list, not in this worker's`},
		{with(func(b *activities.Binding) { b.Tools = append(b.Tools, b.Tools[0]) }), `tool "lookup" is twice in the run's list`},
		{with(func(b *activities.Binding) { b.Tools[0], b.Tools[1] = b.Tools[1], b.Tools[0] }), "tool create_ticket is listed #1 in the run's list, #2 in this worker's"},
		{with(func(b *activities.Binding) { b.Tools[1].Description = "anything" }), "tool create_ticket: description of 8 bytes in the run's list, none in this worker's"},
		{with(func(b *activities.Binding) {
			b.Tools = append(b.Tools, agent.ToolSpec{Name: strings.Repeat("x", 1<<20)})
		}), `tool "` + strings.Repeat("x", 80) + `"... (1048576 bytes) is in the run's list, not in this worker's`},
	} {
		if d := tc.run.Diff(own); d != tc.want {
			t.Errorf("Diff = %q, want %q", d, tc.want)
		}
		if (tc.run.Key() == own.Key()) != (tc.want == "") {
			t.Errorf("%q: keys %s and %s", tc.want, tc.run.Key(), own.Key())
		}
	}
	// No tools and an empty list are the same list.
	if (activities.Binding{ToolsKey: "k"}).Key() != (activities.Binding{ToolsKey: "k", Tools: []agent.ToolSpec{}}).Key() {
		t.Error("a binding without tools and one with an empty list have different keys")
	}
}

// TestMalformedCatalog: what the workflow refuses before any step.
func TestMalformedCatalog(t *testing.T) {
	t.Parallel()
	key := "sha256:" + strings.Repeat("0", 64)
	good := activities.Catalog{ToolsKey: key, Tools: []agent.ToolSpec{{Name: "lookup", Kind: agent.KindRead}, {Name: "filer", Kind: agent.KindRead, Agent: true}}}
	if why := activities.MalformedCatalog(good, ""); why != "" {
		t.Fatalf("a well-formed catalog: %s", why)
	}
	with := func(edit func(*activities.Catalog)) activities.Catalog {
		c := good
		c.Tools = slices.Clone(good.Tools)
		edit(&c)
		return c
	}
	for _, tc := range []struct {
		cat   activities.Catalog
		agent string
		want  string
	}{
		{with(func(c *activities.Catalog) { c.ToolsKey = "" }), "", `its tools key "" is not a content key`},
		{with(func(c *activities.Catalog) { c.ToolsKey = "../x" }), "", `its tools key "../x" is not a content key`},
		{good, "filer", `it is the catalog of a top-level run, and this run is a child run of agent "filer"`},
		{with(func(c *activities.Catalog) { c.Agent = "filer" }), "", `it is the catalog of a child run of agent "filer", and this run is a top-level run`},
		{with(func(c *activities.Catalog) { c.Tools[0].Name = "a.b" }), "", `tool "a.b": the name is not 1 to 64 letters, digits, '_' or '-'`},
		{with(func(c *activities.Catalog) { c.Tools[0].Name = strings.Repeat("n", 65) }), "", `the name is not 1 to 64`},
		{with(func(c *activities.Catalog) { c.Tools = append(c.Tools, c.Tools[0]) }), "", "tool lookup is listed twice"},
		{with(func(c *activities.Catalog) { c.Tools[0].Kind = "model" }), "", `tool lookup: kind "model" is not "read" or "write"`},
		{with(func(c *activities.Catalog) { c.Tools[0].Approval = "sometimes" }), "", `tool lookup: approval "sometimes" is not "", "always", "never" or "deny"`},
		{with(func(c *activities.Catalog) { c.Tools[0].ApprovalTimeout = -time.Second }), "", "tool lookup: approval_timeout -1s is negative"},
		{with(func(c *activities.Catalog) { c.Tools[1].Kind = agent.KindWrite }), "", `agent tool filer: kind "write", and an agent tool is a read`},
	} {
		if why := activities.MalformedCatalog(tc.cat, tc.agent); !strings.Contains(why, tc.want) {
			t.Errorf("MalformedCatalog = %q, want %q", why, tc.want)
		}
	}
}

// offeredTools records the names of the tools each request offers the
// model.
type offeredTools struct {
	llm.Provider
	mu    sync.Mutex
	names [][]string
}

func (o *offeredTools) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	var names []string
	for _, s := range req.Tools {
		names = append(names, s.Name)
	}
	o.mu.Lock()
	o.names = append(o.names, names)
	o.mu.Unlock()
	return o.Provider.Complete(ctx, req)
}

func (o *offeredTools) offered() [][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.names)
}
