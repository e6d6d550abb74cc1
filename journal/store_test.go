package journal_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/journal/storetest"
)

func TestFileStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) journal.Store {
		s, err := journal.NewFileStore(filepath.Join(t.TempDir(), "journal"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMemStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) journal.Store { return journal.NewMemStore() })
}
