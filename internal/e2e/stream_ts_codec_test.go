package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// TestTypeScriptSubscriberDecryptsRun: the hand example run by a real
// worker with a key (AGENTRUN_CODEC_KEYS), started with starter --stream:
// every poll answer in its history is encrypted, and a TypeScript
// subscriber (node stream.js, with codec.js in its data converter) given
// the same key reads the whole stream decoded: the run's steps and status
// changes in order, the approval wait naming its marker, and tokens adding
// up to the answer the Go client reads (the run files its one ticket). A TypeScript subscriber without a
// key, with another key id or with a wrong key under k1 fails with an
// error naming key id k1 and prints no item.
func TestTypeScriptSubscriberDecryptsRun(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(keyEnv)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-ts-encrypted"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "--stream", prompt); code != 0 {
		t.Fatalf("starter --stream: exit %d\n%s", code, out)
	}
	keyed := []string{keyEnv, "AGENTRUN_CODEC_KEY_FILE="}
	sub := subscribeTS(t, ctx, node, srv.HostPort, run, keyed...)
	sub.reads(t, "status AwaitingApproval")

	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, codec.KeySize))
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"no key", []string{"AGENTRUN_CODEC_KEYS=", "AGENTRUN_CODEC_KEY_FILE="}, `payload encrypted under key id "k1", and no keys are configured`},
		{"another key id", []string{"AGENTRUN_CODEC_KEYS=k2:" + other, "AGENTRUN_CODEC_KEY_FILE="}, `payload encrypted under key id "k1", which is not among the configured keys (k2)`},
		{"a wrong key", []string{"AGENTRUN_CODEC_KEYS=k1:" + other, "AGENTRUN_CODEC_KEY_FILE="}, `decrypt payload under key id "k1": payload does not decrypt`},
	} {
		s := subscribeTS(t, ctx, node, srv.HostPort, run, c.env...)
		<-s.read
		err := s.cmd.Wait()
		if err == nil || len(s.lines) != 0 || !strings.Contains(s.stderr.String(), c.want) {
			t.Errorf("TypeScript subscriber with %s: exit %v, printed %d lines, stderr:\n%s\nwant a failure containing %q and no item", c.name, err, len(s.lines), s.stderr.String(), c.want)
		}
		t.Logf("TypeScript subscriber with %s: %s", c.name, firstLine(s.stderr.String()))
	}

	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	items := sub.wait(t)
	got := decodeStream(t, items)
	var res workflows.Result
	if err := keyedClient(t, srv).GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result with the key: %v", err)
	}

	seq := sequence(got.events)
	want := handEvents
	if !slices.Equal(seq, want) {
		t.Fatalf("events, as the keyed TypeScript subscriber read them:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range got.events {
		if e.Status == "AwaitingApproval" && (len(e.Pending) != 1 || e.Pending[0] != ticketStep) {
			t.Errorf("AwaitingApproval event %+v, want pending [%s]", e, ticketStep)
		}
	}
	if !strings.Contains(res.Answer, "TICKET-1") || f.ticketCount(t) != 1 {
		t.Fatalf("the run's answer %q, %d tickets filed; want one ticket, TICKET-1, named in the answer", res.Answer, f.ticketCount(t))
	}
	final := completed(t, got.events, "llm/3")
	if text, _ := got.text("llm/3", final.Attempt); text != res.Answer {
		t.Fatalf("the tokens the TypeScript subscriber read add up to %q, the answer is %q", text, res.Answer)
	}

	// What it read went over the wire encrypted: every poll answer in
	// the run's raw history is a binary/encrypted payload under k1.
	polls, encrypted := 0, 0
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range e.GetWorkflowExecutionUpdateCompletedEventAttributes().GetOutcome().GetSuccess().GetPayloads() {
			polls++
			md := p.GetMetadata()
			if string(md["encoding"]) == codec.Encoding && string(md[codec.MetadataKeyID]) == "k1" {
				encrypted++
			}
		}
	}
	if polls == 0 || encrypted != polls {
		t.Fatalf("%d of the history's %d poll answers are encrypted under k1, want all (and some)", encrypted, polls)
	}
	t.Logf("%d items read from %d encrypted poll answers", len(items), polls)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
