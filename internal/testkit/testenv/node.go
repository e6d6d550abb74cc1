package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit"
)

var (
	npmMu   sync.Mutex
	npmDone = map[string]error{} // install.sh's outcome by folder
)

// Node returns node's path once the npm packages of dir are installed:
// dir/install.sh runs (once per test process) when dir/node_modules is
// missing. It fails the test under CI=true when node or the packages are
// unavailable, and skips it otherwise.
func Node(t testing.TB, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		err = npmInstall(dir)
	}
	if err != nil {
		testkit.Unavailable(t, "node packages of "+dir, err)
	}
	return node
}

func npmInstall(dir string) error {
	npmMu.Lock()
	defer npmMu.Unlock()
	if err, done := npmDone[dir]; done {
		return err
	}
	var err error
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); serr != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, xerr := exec.CommandContext(ctx, "sh", filepath.Join(dir, "install.sh")).CombinedOutput(); xerr != nil {
			err = fmt.Errorf("install.sh: %v\n%s", xerr, out)
		}
	}
	npmDone[dir] = err
	return err
}
