package main

import (
	"context"
	"maps"
	"path"
	"sync"

	"google.golang.org/grpc"
)

// Counting a worker's RPCs by method.

// rpcCounter counts a client's unary RPCs by method.
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]int64
}

func newRPCCounter() *rpcCounter { return &rpcCounter{calls: map[string]int64{}} }

func (c *rpcCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.mu.Lock()
	c.calls[path.Base(method)]++
	c.mu.Unlock()
	return invoke(ctx, method, req, reply, cc, opts...)
}

func (c *rpcCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

func diffCalls(after, before map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if v -= before[k]; v != 0 {
			d[k] = v
		}
	}
	return d
}

func addCalls(sum, d map[string]int64) map[string]int64 {
	if sum == nil {
		sum = map[string]int64{}
	}
	for k, v := range d {
		sum[k] += v
	}
	return sum
}
