package mcp

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// The cap on a server's message size: the SDK's frame cap on stdio, limitBody
// on HTTP, and the tripwire that tells a call its response was over it.

// frameTooLarge is the text of the SDK's error for a stdio message over its
// frame cap (sdk.DefaultMaxLineLength; the error itself is not exported).
const frameTooLarge = "exceeded the configured maximum line length"

// A tripwire is set when a response to the request whose context carries it
// (under tripwireKey) was larger than MaxResultBytes.
type tripwire struct{ atomic.Bool }

type tripwireKey struct{}

// ErrTooLarge is the error of a read of a response body past
// MaxResultBytes.
var ErrTooLarge = fmt.Errorf("the response is larger than %d MiB, the most agentrun takes from an MCP server", MaxResultBytes>>20)

// limitBody is an http.RoundTripper that ends the reading of a response
// body past max bytes with ErrTooLarge, and sets the request's tripwire.
// The SDK reads a JSON response whole (io.ReadAll) whatever its size.
type limitBody struct {
	base http.RoundTripper
	max  int64
}

func (l limitBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	w, _ := req.Context().Value(tripwireKey{}).(*tripwire)
	resp.Body = &cappedBody{rc: resp.Body, left: l.max, trip: w}
	return resp, nil
}

// cappedBody is a response body that gives at most left bytes.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	over bool
	trip *tripwire // nil: none
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		b.over = true
		if b.trip != nil {
			b.trip.Store(true)
		}
		return int(b.left), ErrTooLarge
	}
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
