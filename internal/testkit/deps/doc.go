// Package deps reads the import graph of packages as `go list -deps` gives
// it: every package a program links (the standard library's included, each
// once, dependencies first), what each imports, and a shortest import chain
// from a set of roots to any of them. docs' TestLightImports uses it to name
// how a heavy package gets linked; the bench to count what a worker links.
package deps
