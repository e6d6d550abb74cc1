package deps

import (
	"slices"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit"
)

const self = "github.com/agentrun/agentrun/internal/testkit/deps"

// TestListSelf: the graph of this package holds it last, its standard
// library imports marked standard, and chains that follow real imports.
func TestListSelf(t *testing.T) {
	t.Parallel()
	g, err := List(t.Context(), testkit.Root(), "./internal/testkit/deps")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Packages); n < 10 || g.Packages[n-1] != self {
		t.Fatalf("packages %v: want this package last, after its dependencies", g.Packages)
	}
	if !g.Standard["os/exec"] || !g.Standard["fmt"] || g.Standard[self] {
		t.Errorf("standard: os/exec %t, fmt %t, this package %t; want true, true, false", g.Standard["os/exec"], g.Standard["fmt"], g.Standard[self])
	}
	if m, std := g.Module[self], g.Module["fmt"]; m != "github.com/agentrun/agentrun" || std != "" {
		t.Errorf("modules: this package's %q, fmt's %q; want github.com/agentrun/agentrun and none", m, std)
	}
	if !slices.Contains(g.Imports[self], "os/exec") {
		t.Errorf("imports of this package %v lack os/exec", g.Imports[self])
	}
	if c := g.Chain([]string{self}, "os/exec"); !slices.Equal(c, []string{self, "os/exec"}) {
		t.Errorf("chain to os/exec %v; want [%s os/exec]", c, self)
	}
	c := g.Chain([]string{self}, "unicode/utf8")
	if len(c) < 2 || c[0] != self || c[len(c)-1] != "unicode/utf8" {
		t.Fatalf("chain to unicode/utf8 %v; want it from this package", c)
	}
	for i := 1; i < len(c); i++ {
		if !slices.Contains(g.Imports[c[i-1]], c[i]) {
			t.Errorf("chain %v: %s does not import %s", c, c[i-1], c[i])
		}
	}
	if c := g.Chain([]string{self}, "github.com/openai/openai-go/v3"); c != nil {
		t.Errorf("chain to a package not linked: %v; want none", c)
	}
}

// TestListBadPattern: a package that does not exist is an error naming it.
func TestListBadPattern(t *testing.T) {
	t.Parallel()
	if _, err := List(t.Context(), testkit.Root(), "./no/such/package"); err == nil {
		t.Fatal("List of a missing package: no error")
	}
}
