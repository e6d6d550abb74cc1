package testkit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit"
)

func TestRoot(t *testing.T) {
	root := testkit.Root()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(b), "module github.com/agentrun/agentrun\n") {
		t.Fatalf("go.mod at %s: %v, want agentrun's", root, err)
	}
}

func TestBinNamesTheTarget(t *testing.T) {
	_, err := testkit.Bin("no-such-program", "no-such-target")
	if err == nil || !strings.Contains(err.Error(), "run make no-such-target") || !strings.Contains(err.Error(), filepath.Join("bin", "no-such-program")) {
		t.Fatalf("Bin of a missing program: %v, want the path and the make target", err)
	}
}
