package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentrun/agentrun/plumbing/shell"
)

// Commands name the programs in the commands the starter and reconcile
// print for a person, so that each command works when pasted into the
// shell where it was printed:
//
//   - agentrun's programs as the running one was invoked: "bin/starter"
//     and "bin/reconcile" after bin/starter, "go run ./reconcile" after go
//     run, "reconcile" after a bare "starter" found on PATH;
//   - the Temporal CLI as "temporal" when it is on PATH, else the one next
//     to the running program or in ./bin (where make installs it), e.g.
//     "bin/temporal", else "temporal".
//
// The Web UI's current details, read anywhere, write "temporal" and
// "reconcile", as installed on a PATH.
type Commands struct {
	Starter   string
	Reconcile string
	Temporal  string
}

// CommandsFor derives the Commands from how the running program was
// invoked: its os.Args[0].
func CommandsFor(argv0 string) Commands {
	return commandsFor(argv0, exists, onPath)
}

// goCacheDir is the folder in the build cache where go run keeps the
// programs it built: <GOCACHE>/xx/<64 hex digits>-d.
var goCacheDir = regexp.MustCompile(`^[0-9a-f]{64}-d$`)

func exists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func commandsFor(argv0 string, exists, onPath func(string) bool) Commands {
	c := Commands{Starter: "starter", Reconcile: "reconcile", Temporal: "temporal"}
	dir := filepath.Dir(argv0)
	goRun := filepath.Base(dir) == "exe" && strings.Contains(argv0, "go-build") || goCacheDir.MatchString(filepath.Base(dir))
	switch {
	case goRun: // go run builds into go-build*/b001/exe/ or its cache
		c.Starter, c.Reconcile = "go run ./starter", "go run ./reconcile"
		dir = "bin"
	case strings.Contains(argv0, "/"): // a path, as typed
		for _, p := range []struct {
			name string
			to   *string
		}{{"starter", &c.Starter}, {"reconcile", &c.Reconcile}} {
			if sib := filepath.Join(dir, p.name); exists(sib) || !onPath(p.name) {
				*p.to = asPath(sib)
			}
		}
	default: // found on PATH
		dir = ""
	}
	if t := filepath.Join(dir, "temporal"); !onPath("temporal") && dir != "" && exists(t) {
		c.Temporal = asPath(t)
	}
	return c
}

// asPath quotes a program's path for a shell, keeping it a path: a bare
// name would be looked up on PATH instead.
func asPath(p string) string {
	if !strings.Contains(p, "/") {
		p = "./" + p
	}
	return shell.Quote(p)
}

// or fills names left empty with the bare program names.
func (c Commands) or() Commands {
	if c.Starter == "" {
		c.Starter = "starter"
	}
	if c.Reconcile == "" {
		c.Reconcile = "reconcile"
	}
	if c.Temporal == "" {
		c.Temporal = "temporal"
	}
	return c
}
