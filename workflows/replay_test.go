package workflows_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/workflows"
)

// TestReplay replays histories captured from real runs on the dev server
// (temporal workflow show -w RUN --output json): the hand example approved
// by signals (one of them rejected), approved by an update, and a write
// made Indeterminate by a SIGKILLed worker and reconciled with retry, and
// the three executions of a hand example that continued as new every two
// steps (continue-as-new-1 and -2 end in a continue-as-new, -3 starts from
// a checkpoint); a run stopped twice as BudgetExceeded and raised by a
// rejected update, a rejected signal, an update and reconcile budget
// (budget-raised); and a misspelled signal followed by an approve update
// answered after the run acted on it (misspelled-signal-update-answer,
// with its version marker); a session answering two messages, Idle between
// them, with an empty message refused by update and a blank one recorded
// as rejected, then completed by its idle timer (session-messages). These
// three were captured by the e2e tests with
// AGENTRUN_HISTORY_DIR set. Two approval expiries where the model asked for
// lookup and create_ticket in one reply, lookup took 4s and the approval
// timeout was 2s (AGENTRUN_DEMO_DELAY=4s, AGENTRUN_APPROVAL_TIMEOUT=2s):
// expiry-read-first-old-clock from the build before versionExpiryClock (its
// clock starts at the wait after lookup: a 2s timer), and expiry-read-first
// from this one (its version marker; the clock started at the model step,
// so the call expires at the wait, with no timer). lean-step-results is
// the hand example of internal/e2e's TestOperatorRoughEdgesOnDevServer
// from the build whose model steps record no conversation while it stays
// inline (the loop derives it), whose model steps and reads carry no run
// key and whose retry policies list no error types; it replays on the
// builds before too. A change to the workflow
// that reorders its commands fails here. e2e-agent and
// e2e-agent.tool.1.0.filer are a planner and its child run (internal/e2e's
// TestSubAgentOnDevServer): the child's approval shown on the parent and
// approved through it. Each file is named after its run: a child run's id
// derives from its parent's, so the replayer is given the run id. The pair
// in testdata/answered-at-once is the same from the build before
// versionForwardAnswer, whose update forwarded to the child answered at
// once. e2e-cost is the hand example priced by the models file, parked
// BudgetExceeded by its cost after one model call and raised by reconcile
// budget (internal/e2e's TestCostBudgetOnDevServer): its steps carry their
// cost. e2e-forged-child and e2e-forged-child.tool.1.0.filer are a tree of
// the build with versionChildRead and versionChildShare (internal/e2e's
// TestForgedChildReportsOnDevServer): the parent reads its child at each
// ring, forged reports included, and the child reads its share from its
// parent after a raise.
// From internal/e2e's trust tests: e2e-retry-approval-never, attempt
// 2 of a workflow retry whose input forged continued, refused at its start
// (its versionTrustedContinued marker); e2e-list-approval-never, a run whose
// tool listing was completed by hand with create_ticket needing no
// approval, its steps carrying the catalog's key and its first model step
// refused by the worker; and e2e-list-no-tools-key, a listing without a
// tools key, refused before any step (its versionCatalogChecked marker).
// From the root package's TestForkOnTemporal: fork-origin-fork-tool-2-0-
// create_ticket, a fork from a write step with the writes acknowledged
// (its agentrun.ForkPoint local activity's marker, approval asked again),
// and fork-origin-fork-replay-llm-1, a replay onto another agent whose
// calls were answered by agentrun.ReplayCall.
// From internal/e2e under versionFewerActions (recorded by the build after
// 19ceda2: they do not replay on 19ceda2 or any build before it):
// e2e-operator, TestOperatorRoughEdgesOnDevServer's hand example, started
// with AgentRunStatus Running by the client and so upserting it no more
// (the version's marker in the first workflow task, with activity-names'),
// and e2e-session, TestSessionOnDevServer's streamed session of three
// answers, its blank message refused with no upsert, one idle timer kept
// across its turns and a second for the rest of the last answer's. Its
// tool steps carry the catalog's key and no spec (the build after ae41eb7;
// testdata/spec-in-tool-steps/e2e-operator is the same run from the build
// before, each tool step carrying the called tool's spec). Activity inputs
// are not compared on replay, so both replay on either build, and a worker
// of either runs the other's steps: ae41eb7's checks a spec only where a
// step carries one.
// From internal/e2e's stream tests, recorded by the build that asks for
// streamed answers by reference (text_in_stream; a build before it reads
// their answers as empty): e2e-stream-kill, TestStreamWorkerKilledMidModel's
// run, whose llm/2 ran twice and whose answer the run took from attempt
// 2's tokens and the tail the step kept back (stream_tail), which the run
// published itself; e2e-stream-forged, TestStreamAnswerForgedTokens's, whose
// stream held a forged token, so that the run read the answer from the
// store (its agentrun.ReadAnswer local activity's marker).
// e2e-operator, e2e-session and the e2e-forged-child pair are recorded by
// the build that takes versionChanges (one marker at each execution's
// start implying every change before it; they do not replay on a build
// before it); testdata/own-markers holds the same runs from the build
// before, each change taken by its own marker, which must replay on.
// Their operator updates answer with State.Brief and their timers carry
// summaries: neither is compared on replay.
func TestReplay(t *testing.T) {
	t.Parallel()
	files, err := committedHistories()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 11 {
		t.Fatalf("found %d histories in testdata, want at least 11", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			// The file's name is the run id: a child run's id derives from it.
			if err := workflows.ReplayFile(f, runOf(f), worker.WorkflowReplayerOptions{}); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

// TestReplayWithCodec: the committed histories, recorded without
// encryption, replay on a worker with the payload codec set (its decode
// leaves unencrypted payloads as they are), so turning encryption on does
// not break runs in flight.
func TestReplayWithCodec(t *testing.T) {
	t.Parallel()
	cdc, err := codec.New([]codec.Key{{ID: "k1", Bytes: bytes.Repeat([]byte{1}, codec.KeySize)}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := committedHistories()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			opts := worker.WorkflowReplayerOptions{DataConverter: codec.DataConverter(cdc), FailureConverter: codec.FailureConverter(cdc)}
			if err := workflows.ReplayFile(f, runOf(f), opts); err != nil {
				t.Fatalf("replay %s with the codec: %v", f, err)
			}
		})
	}
}

// TestReplayEncrypted replays a history recorded with encryption on (the
// hand example of internal/e2e's TestHandExampleEncrypted, captured with
// AGENTRUN_HISTORY_DIR; every payload in it is sealed under the test key
// "k1", 32 bytes of 0x5a, a key for tests only): with the key it replays;
// with the key rotated behind a new one it replays; with no codec, or a
// key under another id, it does not.
func TestReplayEncrypted(t *testing.T) {
	t.Parallel()
	const file = "testdata/encrypted/hand-k1.json"
	k1 := codec.Key{ID: "k1", Bytes: bytes.Repeat([]byte{0x5a}, codec.KeySize)}
	k2 := codec.Key{ID: "k2", Bytes: bytes.Repeat([]byte{0x01}, codec.KeySize)}
	for _, tc := range []struct {
		name string
		keys []codec.Key
		ok   bool
		want string // in the error, "" for any
	}{
		{"k1", []codec.Key{k1}, true, ""},
		{"rotated", []codec.Key{k2, k1}, true, ""},
		{"none", nil, false, ""},
		{"k2", []codec.Key{k2}, false, ""}, // the replayer reports the task's empty commands
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cdc *codec.Codec
			if tc.keys != nil {
				var err error
				if cdc, err = codec.New(tc.keys); err != nil {
					t.Fatal(err)
				}
			}
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
				DataConverter:    codec.DataConverter(cdc),
				FailureConverter: codec.FailureConverter(cdc),
			})
			if err != nil {
				t.Fatal(err)
			}
			r.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
			err = r.ReplayWorkflowHistoryFromJSONFile(nil, file)
			if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("replay with keys %s: %v, want ok %v or an error naming %s", tc.name, err, tc.ok, tc.want)
			}
		})
	}
}

// runOf is the run id of a committed history: its file's name.
func runOf(file string) string { return strings.TrimSuffix(filepath.Base(file), ".json") }

// committedHistories lists the histories TestReplay and TestReplayWithCodec
// replay: testdata's, and those of older builds kept beside them.
func committedHistories() ([]string, error) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{"answered-at-once", "spec-in-tool-steps", "own-markers"} {
		older, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		if err != nil {
			return nil, err
		}
		files = append(files, older...)
	}
	return files, nil
}
