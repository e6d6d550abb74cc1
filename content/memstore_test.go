package content_test

import (
	"testing"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/content/storetest"
)

func TestMemStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) content.Store { return content.NewMemStore() })
}

func TestMemStoreZeroValue(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) content.Store { return new(content.MemStore) })
}
