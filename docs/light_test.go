package docs_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// lightRoots are the packages a library user links into a worker of their
// own: the workflow, the activities and what they are built from.
var lightRoots = []string{
	".", "./workflows", "./activities", "./execute", "./tools", "./llm",
	"./agent", "./journal", "./content", "./operator",
}

// heavy are the import path prefixes those packages must not link: model
// SDKs, the MCP SDK, Prometheus, the OpenTelemetry SDK and exporters. They
// come in through llm/providers, tools/mcp, metrics/prometheus and
// plumbing/tracing/export, which only the programs import.
var heavy = []string{
	"github.com/openai/",
	"github.com/anthropics/",
	"github.com/modelcontextprotocol/",
	"github.com/prometheus/",
	"go.opentelemetry.io/otel/exporters/",
	"go.opentelemetry.io/otel/sdk",
}

func isHeavy(path string) bool {
	return slices.ContainsFunc(heavy, func(p string) bool { return strings.HasPrefix(path, p) })
}

// TestLightImports: the packages of lightRoots link none of heavy. A
// failure names each heavy package and one import chain to it.
func TestLightImports(t *testing.T) {
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \",\"}}"}, lightRoots...)
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{} // package: what it imports
	var order []string               // go list's order: dependencies first
	for line := range strings.Lines(string(out)) {
		path, deps, _ := strings.Cut(strings.TrimSpace(line), " ")
		imports[path] = strings.FieldsFunc(deps, func(r rune) bool { return r == ',' })
		order = append(order, path)
	}
	const module = "github.com/agentrun/agentrun"
	if len(imports) < 50 || imports[module+"/workflows"] == nil {
		t.Fatalf("go list gave %d packages, not the workflow's: %.300s", len(imports), out)
	}
	// Breadth first from the roots: parent is how each package is first
	// reached, so a chain back from it is a shortest one.
	parent := map[string]string{}
	var queue []string
	for _, r := range lightRoots {
		p := module + strings.TrimPrefix(r, ".")
		parent[p] = ""
		queue = append(queue, p)
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, d := range imports[p] {
			if _, seen := parent[d]; !seen {
				parent[d] = p
				queue = append(queue, d)
			}
		}
	}
	for _, p := range order {
		if !isHeavy(p) {
			continue
		}
		chain := []string{p}
		for q := parent[p]; q != ""; q = parent[q] {
			chain = append(chain, q)
		}
		slices.Reverse(chain)
		t.Errorf("%s is linked: %s", p, strings.Join(chain, " → "))
	}
}

// TestIsHeavy: the check names what it must refuse and lets the light
// OpenTelemetry API through.
func TestIsHeavy(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/openai/openai-go/v3":                                  true,
		"github.com/anthropics/anthropic-sdk-go/v2":                       true,
		"github.com/modelcontextprotocol/go-sdk/mcp":                      true,
		"github.com/prometheus/client_golang/prometheus":                  true,
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc": true,
		"go.opentelemetry.io/otel/sdk/trace":                              true,
		"go.opentelemetry.io/otel/trace":                                  false,
		"go.opentelemetry.io/otel/metric":                                 false,
		"github.com/agentrun/agentrun/llm":                                false,
		"github.com/agentrun/agentrun/plumbing/tracing":                   false,
	} {
		if isHeavy(path) != want {
			t.Errorf("isHeavy(%q) = %t, want %t", path, !want, want)
		}
	}
}
