package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// MkdirAll creates dir and its missing parents with perm, and calls syncDir
// on the parent of each folder it created, parents first, so that the new
// folders survive a crash. It returns dir's absolute path.
func MkdirAll(dir string, perm os.FileMode, syncDir func(dir string) error) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// Collect the folders MkdirAll is about to create, deepest first.
	var missing []string
	for p := abs; ; p = filepath.Dir(p) {
		_, err := os.Stat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(abs, perm); err != nil {
		return "", err
	}
	for _, p := range slices.Backward(missing) {
		if err := syncDir(filepath.Dir(p)); err != nil {
			return "", fmt.Errorf("fsync %s: %w", filepath.Dir(p), err)
		}
	}
	return abs, nil
}
