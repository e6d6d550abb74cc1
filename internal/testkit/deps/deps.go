package deps

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Graph is the import graph of some packages and all they import.
type Graph struct {
	// Packages are the packages, dependencies first (go list's order).
	Packages []string
	// Imports maps each package to the packages it imports.
	Imports map[string][]string
	// Standard holds the standard library's packages among Packages.
	Standard map[string]bool
	// Module maps each package outside the standard library to its
	// module's path.
	Module map[string]string
}

// List runs `go list -deps` on patterns (import paths, or paths relative
// to dir such as "./workflows") in dir, a folder of the module.
func List(ctx context.Context, dir string, patterns ...string) (*Graph, error) {
	args := append([]string{"list", "-deps", "-f", `{{.ImportPath}} {{.Standard}} {{with .Module}}{{.Path}}{{else}}-{{end}} {{join .Imports ","}}`}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v: %s", strings.Join(patterns, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	g := &Graph{Imports: map[string][]string{}, Standard: map[string]bool{}, Module: map[string]string{}}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("go list -deps %s: unexpected line %q", strings.Join(patterns, " "), line)
		}
		path := f[0]
		g.Packages = append(g.Packages, path)
		if f[1] == "true" {
			g.Standard[path] = true
		}
		if f[2] != "-" {
			g.Module[path] = f[2]
		}
		if len(f) > 3 {
			g.Imports[path] = strings.Split(f[3], ",")
		} else {
			g.Imports[path] = nil
		}
	}
	return g, nil
}

// Chain returns a shortest import chain from one of roots (import paths)
// to pkg, roots first and pkg last; nil when none of roots imports it.
func (g *Graph) Chain(roots []string, pkg string) []string {
	// Breadth first from the roots: parent is how each package is first
	// reached, so a chain back from pkg is a shortest one.
	parent := map[string]string{}
	var queue []string
	for _, r := range roots {
		if _, seen := parent[r]; !seen {
			parent[r] = ""
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, d := range g.Imports[p] {
			if _, seen := parent[d]; !seen {
				parent[d] = p
				queue = append(queue, d)
			}
		}
	}
	if _, ok := parent[pkg]; !ok {
		return nil
	}
	chain := []string{pkg}
	for q := parent[pkg]; q != ""; q = parent[q] {
		chain = append(chain, q)
	}
	slices.Reverse(chain)
	return chain
}
