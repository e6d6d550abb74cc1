package streams_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// readmeTypeScript finds the TypeScript examples of docs/progress.md.
var readmeTypeScript = regexp.MustCompile("(?s)```typescript\n(.*?)```")

// TestReadmeTypeScriptExample type-checks docs/progress.md's TypeScript
// subscriber, strictly, against the pinned @temporalio packages that
// TestTypeScriptClient runs, with the pinned TypeScript compiler: a
// renamed method or option in the example fails here.
func TestReadmeTypeScriptExample(t *testing.T) {
	node := tsClient(t)
	readme, err := os.ReadFile("../docs/progress.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := readmeTypeScript.FindAllSubmatch(readme, -1)
	if len(examples) != 1 {
		t.Fatalf("docs/progress.md has %d TypeScript examples; want the one subscriber", len(examples))
	}
	modules, err := filepath.Abs(filepath.Join(tsDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"example.mts": string(examples[0][1]), // an ES module: the example awaits at top level
		"tsconfig.json": `{"compilerOptions": {"strict": true, "noEmit": true, "module": "nodenext",
			"moduleResolution": "nodenext", "target": "es2022", "skipLibCheck": true}, "files": ["example.mts"]}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	tsc := exec.Command(node, filepath.Join(modules, "typescript", "bin", "tsc"), "-p", dir)
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("docs/progress.md's TypeScript example does not compile: %v\n%s", err, out)
	}
}
