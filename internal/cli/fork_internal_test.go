package cli

import (
	"strings"
	"testing"
)

func TestParseFork(t *testing.T) {
	a, err := parseFork([]string{"fork", "r1", "--from=llm/3", "--model", "scripted", "--ack-writes"})
	if err != nil || a.Origins[0] != "r1" || a.Fork.From != "llm/3" || a.Fork.Model != "scripted" || !a.Fork.AckWrites || a.Fork.Replay {
		t.Fatalf("fork: %+v, %v", a, err)
	}
	a, err = parseFork([]string{"eval", "--from", "llm/2", "--agent", "filer", "r1", "r2"})
	if err != nil || len(a.Origins) != 2 || !a.Fork.Replay || a.Fork.Agent != "filer" {
		t.Fatalf("eval: %+v, %v", a, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fork", "r1"}, "--from STEP is missing"},
		{[]string{"fork", "r1", "--from", "x"}, "is not a step name"},
		{[]string{"fork", "r1", "r2", "--from", "llm/1"}, "fork takes one RUN; got 2"},
		{[]string{"fork", "r1", "--from", "llm/1", "--agent", "a", "--model", "m"}, "want one"},
		{[]string{"eval", "--from", "llm/1", "--id", "x", "r1"}, "--id, --system, --ack-writes and --replay are fork's"},
		{[]string{"eval", "--from", "llm/1", "--model", "m"}, "no run given"},
		{[]string{"fork", "r1", "--from", "llm/1", "--color"}, "unknown option --color"},
	} {
		if _, err := parseFork(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	// On Temporal a model spec is refused: the workers' agents run forks.
	a, err = parseFork([]string{"fork", "r1", "--from", "llm/1", "--model", "openai:gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.forkOptions("r1"); err == nil || !strings.Contains(err.Error(), "fork --model is the local engine's (reconcile --local); on Temporal a fork runs one of the workers' agents: --agent A") {
		t.Fatalf("remote --model: %v", err)
	}
}
