package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]bool{}
)

// binPrefix begins the name of a test process's folder of programs,
// followed by its pid.
const binPrefix = "agentrun-bin-"

// sweepBuilds removes the folders of programs that test processes no
// longer running left behind (a test process has no hook at its exit, and
// each folder holds some 300 MB; CI runs on the same machine every time).
func sweepBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), binPrefix), "-", 2)[0])
		if err == nil && pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // its process runs: it may be using them
		}
		gone := err == nil && pid > 0 // its process has ended
		if fi, serr := os.Stat(d); serr == nil && (gone || time.Since(fi.ModTime()) > time.Hour) {
			_ = os.RemoveAll(d) // or an older name, an hour old
		}
	}
}

// Program builds one of the project's programs ("starter", "reconcile",
// "worker", or a package path under the module such as
// "internal/testkit/providerfake/cmd/providerfake") once per test process
// and returns its path.
func Program(t testing.TB, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		sweepBuilds()
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", binPrefix, os.Getpid()))
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		buildDir = dir
	}
	path := filepath.Join(buildDir, filepath.Base(name)) // go build -o DIR/ names it so
	if !built[name] {
		if err := Build(context.Background(), buildDir, name); err != nil {
			t.Fatal(err)
		}
		built[name] = true
	}
	return path
}

// Build builds the project's programs (package paths under the module:
// "starter", "reconcile", "worker", ...) into dir with one go build in the module root.
func Build(ctx context.Context, dir string, names ...string) error {
	dir, err := filepath.Abs(dir) // the build runs in the module root
	if err != nil {
		return fmt.Errorf("go build %s: %w", strings.Join(names, " "), err)
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, name := range names {
		args = append(args, "github.com/agentrun/agentrun/"+name)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = testkit.Root() // the module's, wherever the caller runs
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(names, " "), err, bytes.TrimSpace(out))
	}
	return nil
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
