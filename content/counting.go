package content

import (
	"context"
	"sync/atomic"
)

// Counting wraps a Store and counts what goes through it, for benchmarks and
// tests. Set Store before first use; it is safe for concurrent use.
type Counting struct {
	Store Store

	puts, gets, bytesPut, bytesGot atomic.Int64
}

var _ Store = (*Counting)(nil)

// Stats are the counts of a Counting store. Only calls that returned nil
// count.
type Stats struct {
	Puts     int64 // Put calls, whether or not the blob was already there
	Gets     int64 // Get calls
	BytesPut int64 // bytes passed to Put calls
	BytesGot int64 // bytes returned by Get calls
}

// Put calls the wrapped Store's Put and counts it if it returned nil.
func (c *Counting) Put(ctx context.Context, data []byte) (string, error) {
	key, err := c.Store.Put(ctx, data)
	if err == nil {
		c.puts.Add(1)
		c.bytesPut.Add(int64(len(data)))
	}
	return key, err
}

// Get calls the wrapped Store's Get and counts it if it returned nil.
func (c *Counting) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := c.Store.Get(ctx, key)
	if err == nil {
		c.gets.Add(1)
		c.bytesGot.Add(int64(len(data)))
	}
	return data, err
}

// Stats returns the counts so far. Each count is read atomically, but not
// all four at one instant: with calls in flight they may be a call apart.
func (c *Counting) Stats() Stats {
	return Stats{
		Puts:     c.puts.Load(),
		Gets:     c.gets.Load(),
		BytesPut: c.bytesPut.Load(),
		BytesGot: c.bytesGot.Load(),
	}
}
