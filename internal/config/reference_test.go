package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit"
)

// root is the module's root.
var root = testkit.Root()

// reference is the configuration reference that must list every variable.
const reference = "docs/configuration.md"

// devReaders are the packages besides this one that may read the
// environment, and why: they are not the programs' packages but test
// helpers and the crash campaign, which read test-only variables
// (AGENTRUN_TEMPORAL_CLI, AGENTRUN_TEST_POSTGRES_URL, CI, CHAOS_*). The
// reference lists what they read too, in its Development section.
var devReaders = map[string]string{
	"internal/testkit/devserver":    "finds the temporal CLI tests, bench and chaos start",
	"internal/testkit/pgtest":       "finds the PostgreSQL server of the tests",
	"internal/testkit":              "fails instead of skipping under CI (the one place that reads CI)",
	"internal/testkit/testenv":      "the tests' own settings",
	"internal/testkit/mcptest":      "the tests' own settings",
	"internal/testkit/jaegertest":   "finds the Jaeger tests start (AGENTRUN_JAEGER)",
	"internal/testkit/clustertest":  "the tests' own settings",
	"chaos":                         "the crash campaign's own debug and log switches",
	"bench/internal/embeddedworker": "the bench's embedded worker, started with the worker program's environment",
	"bench/internal/plainworker":    "the bench's plain Temporal worker, started with the same environment",
}

// tableName matches a variable in the first column of a Markdown table row.
var tableName = regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]*)` \\|")

// TestReferenceListsEveryVariable: docs/configuration.md lists, in its
// tables, exactly the variables the code reads: every name of config.Names
// (all the programs read), and every name the development packages
// (devReaders) read; a name it lists that nothing reads fails too.
func TestReferenceListsEveryVariable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, reference))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range tableName.FindAllStringSubmatch(string(b), -1) {
		if listed[m[1]] {
			t.Errorf("%s lists %s twice", reference, m[1])
		}
		listed[m[1]] = true
	}
	read := map[string]string{} // name -> who reads it
	for _, name := range config.Names {
		read[name] = "internal/config"
	}
	for _, r := range envReads(t) {
		if _, ok := devReaders[r.pkg]; !ok {
			t.Errorf("%s reads the environment (%s): only internal/config may, through the getenv the programs' mains pass to config.Load; add the variable to config.Names and the Config (or, for a test helper, to devReaders here with a reason)", r.pos, r.call)
			continue
		}
		if r.name == "" {
			t.Errorf("%s: %s of something this test cannot resolve: name the variable with a string literal or a constant of the package", r.pos, r.call)
			continue
		}
		if _, ok := read[r.name]; !ok {
			read[r.name] = r.pkg
		}
	}
	for _, name := range slices.Sorted(maps.Keys(read)) {
		if !listed[name] {
			t.Errorf("%s reads %s, which %s does not list: add a row with its default and meaning", read[name], name, reference)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		if _, ok := read[name]; !ok {
			t.Errorf("%s lists %s, which no code reads: remove its row, or read it in internal/config", reference, name)
		}
	}
}

// envRead is one call that reads an environment variable.
type envRead struct {
	pkg  string // the package's folder, from the module's root
	pos  string // file:line
	call string // e.g. os.Getenv
	name string // the variable, "" when not a literal or a constant
}

// envReads finds every call of os.Getenv, os.LookupEnv and syscall.Getenv
// in the module's non-test Go files.
func envReads(t *testing.T) []envRead {
	t.Helper()
	var reads []envRead
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
			return filepath.SkipDir
		}
		names, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		var files []*ast.File // the folder's package, without its tests
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		rel, _ := filepath.Rel(root, path)
		consts := stringConsts(files)
		for _, f := range files {
			imports := map[string]string{} // local name -> path
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				local := filepath.Base(p)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				imports[local] = p
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				fn := imports[x.Name] + "." + sel.Sel.Name
				if fn != "os.Getenv" && fn != "os.LookupEnv" && fn != "syscall.Getenv" {
					return true
				}
				r := envRead{pkg: filepath.ToSlash(rel), pos: fset.Position(call.Pos()).String(), call: fn}
				switch a := call.Args[0].(type) {
				case *ast.BasicLit:
					r.name, _ = strconv.Unquote(a.Value)
				case *ast.Ident:
					r.name = consts[a.Name]
				}
				reads = append(reads, r)
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) == 0 {
		t.Fatal("found no read of the environment at all: the walk is broken")
	}
	return reads
}

// stringConsts are the constants of files with a string literal value.
func stringConsts(files []*ast.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							out[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return out
}
