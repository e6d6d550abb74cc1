package durable_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrun/agentrun/plumbing/durable"
)

func TestMkdirAll(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var synced []string
	sync := func(d string) error { synced = append(synced, d); return nil }
	abs, err := durable.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o700, sync)
	if err != nil || abs != filepath.Join(root, "a", "b", "c") {
		t.Fatalf("MkdirAll = %q, %v", abs, err)
	}
	want := []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}
	if !slices.Equal(synced, want) {
		t.Fatalf("synced %q, want the parents of the created folders, outermost first: %q", synced, want)
	}
	if fi, err := os.Stat(abs); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created folder: %v, %v; want mode 0700", fi, err)
	}
	synced = nil
	if _, err := durable.MkdirAll(abs, 0o700, sync); err != nil || len(synced) != 0 {
		t.Fatalf("existing folder: %v, synced %q; want nothing to sync", err, synced)
	}
	boom := errors.New("boom")
	_, err = durable.MkdirAll(filepath.Join(root, "x", "y"), 0o700, func(string) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("a failed fsync: %v, want it returned", err)
	}
}
