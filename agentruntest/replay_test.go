package agentruntest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agentruntest"
)

// fatalT records the first Fatalf and ends its goroutine, as a test's
// would, without failing the test that holds it.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper()             {}
func (f *fatalT) Cleanup(func())      {}
func (f *fatalT) Logf(string, ...any) {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run runs fn on a goroutine of its own and waits for it.
func (f *fatalT) run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// TestReplay: committed histories of real runs replay (a planner and
// its child run, whose id derives from the file's name); the same history
// with one activity renamed fails the test, naming the file.
func TestReplay(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"hand-signals.json", "answered-at-once/e2e-agent.json", "answered-at-once/e2e-agent.tool.1.0.filer.json"} {
		agentruntest.Replay(t, filepath.Join("..", "workflows", "testdata", f), agentruntest.ReplayOptions{})
	}

	b, err := os.ReadFile("../workflows/testdata/hand-signals.json")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), `"name": "CallModel"`, `"name": "CallModelRenamed"`, 1)
	if changed == string(b) {
		t.Fatal("hand-signals.json schedules no CallModel")
	}
	file := filepath.Join(t.TempDir(), "hand-signals.json")
	if err := os.WriteFile(file, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	ft := &fatalT{TB: t}
	ft.run(func() { agentruntest.Replay(ft, file, agentruntest.ReplayOptions{}) })
	if !strings.Contains(ft.msg, "agentruntest.Replay "+file) || !strings.Contains(ft.msg, "nondeterministic") {
		t.Fatalf("replay of a changed history: %q; want a failure naming the file and the non-determinism", ft.msg)
	}
}
