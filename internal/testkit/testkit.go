package testkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// ModuleRoot returns the folder of agentrun's go.mod (go env GOMOD).
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("find the module root: not inside agentrun's module")
	}
	return filepath.Dir(gomod), nil
}

// Bin returns bin/NAME at the module root, where make TARGET builds it; an
// error names the target when it is not there.
func Bin(name, target string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no %s at %s: run make %s", name, p, target)
	}
	return p, nil
}
