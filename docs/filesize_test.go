package docs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines bounds a production Go file: one that runs past it does
// more than one job and is split (STYLE.md). Tests are not counted.
const maxFileLines = 450

// TestNoLongFiles: no production Go file of the checkout (build tools,
// testdata and dependencies aside) is longer than maxFileLines.
func TestNoLongFiles(t *testing.T) {
	skip := map[string]bool{"bin": true, "build": true, "node_modules": true, "testdata": true, ".git": true}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines; split it so that each file keeps to one job (at most %d)", path, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
