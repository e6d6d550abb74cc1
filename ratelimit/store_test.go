package ratelimit_test

import (
	"testing"

	"github.com/agentrun/agentrun/ratelimit"
	"github.com/agentrun/agentrun/ratelimit/storetest"
)

func TestMemStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) ratelimit.Store { return &ratelimit.MemStore{} })
}

// TestFileStoreConformance runs the suite with a FileStore of its own for
// each updater, all over one folder, as the processes of a host share it.
func TestFileStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.RunShared(t, func(t *testing.T) func() ratelimit.Store {
		dir := t.TempDir()
		return func() ratelimit.Store {
			s, err := ratelimit.NewFileStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
