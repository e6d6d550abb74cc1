package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]bool{}
)

// Program builds one of the project's programs ("starter", "reconcile",
// "worker") once per test process and returns its path.
func Program(t testing.TB, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "agentrun-bin-")
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		buildDir = dir
	}
	path := filepath.Join(buildDir, name)
	if !built[name] {
		out, err := exec.Command("go", "build", "-o", path, "github.com/agentrun/agentrun/"+name).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
		built[name] = true
	}
	return path
}

// WaitFor polls cond every 20ms until it holds, failing the test with what
// after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
