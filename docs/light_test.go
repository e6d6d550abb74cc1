package docs_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit/deps"
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
	g, err := deps.List(t.Context(), "..", lightRoots...)
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/agentrun/agentrun"
	if len(g.Packages) < 50 || g.Imports[module+"/workflows"] == nil {
		t.Fatalf("go list gave %d packages, not the workflow's: %.300s", len(g.Packages), strings.Join(g.Packages, " "))
	}
	var roots []string
	for _, r := range lightRoots {
		roots = append(roots, module+strings.TrimPrefix(r, "."))
	}
	for _, p := range g.Packages {
		if isHeavy(p) {
			t.Errorf("%s is linked: %s", p, strings.Join(g.Chain(roots, p), " → "))
		}
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

// TestEngineFreeAgent: package agent, the loop's rules that both engines
// share, links no store, limiter, engine or Temporal package: only the
// standard library and agentrun's plumbing.
func TestEngineFreeAgent(t *testing.T) {
	g, err := deps.List(t.Context(), "..", "./agent")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/agentrun/agentrun"
	for _, p := range g.Packages {
		own, ok := strings.CutPrefix(p, module+"/")
		switch {
		case p == module+"/agent" || g.Standard[p] || (ok && strings.HasPrefix(own, "plumbing/")):
		case ok:
			t.Errorf("package agent links %s (%s); want no store, limiter or engine", own, strings.Join(g.Chain([]string{module + "/agent"}, p), " → "))
		default:
			t.Errorf("package agent links %s; want the standard library and agentrun's plumbing only", p)
		}
	}
}
