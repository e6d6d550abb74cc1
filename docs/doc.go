// Package docs holds agentrun's documentation: the Markdown files beside
// this one, which the README links to. It has no code; its test keeps the
// documentation honest: the README stays a short tour (at most 200
// lines), its layout names every top-level folder and no other, and
// every relative link in the README and in docs/ names a file that
// exists and, with a #fragment, a heading in it. Its other tests keep the
// code's shape: no production file past 450 lines, and the packages a
// library user links for a worker (the root, workflows, activities,
// execute, tools, llm, agent, journal, content, operator) linking no model
// or MCP SDK, no Prometheus and no OpenTelemetry SDK or exporter
// (TestLightImports, which names the import chain of each).
package docs
