package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// CI reports whether the tests run under CI (CI=true): there nothing a test
// needs may be missing.
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends t because what it needs is not there (err says why):
// t fails under CI=true and is skipped otherwise, and either way the line
// names what was missing.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if CI() {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s unavailable (fails under CI=true): %v", what, err)
}

// Root returns agentrun's module root, the folder of its go.mod: two
// folders above this file's, which the compiler recorded. It needs no go
// command and cannot fail; a program built with -trimpath has no such
// path, and none of the tests' and campaigns' builds uses it.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Bin returns bin/NAME at the module root, where make TARGET builds it; an
// error names the target when it is not there.
func Bin(name, target string) (string, error) {
	p := filepath.Join(Root(), "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no %s at %s: run make %s", name, p, target)
	}
	return p, nil
}
