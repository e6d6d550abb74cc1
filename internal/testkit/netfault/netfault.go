package netfault

import (
	"fmt"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// server is the toxiproxy server every proxy of this process belongs to;
// its API is never served.
var server = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// Proxy is an enabled or cut proxy to one upstream address.
type Proxy struct {
	p *toxiproxy.Proxy
}

// Start starts a proxy named name (for logs) on a free port of 127.0.0.1
// in front of upstream ("host:port").
func Start(name, upstream string) (*Proxy, error) {
	p := toxiproxy.NewProxy(server(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start proxy %s to %s: %w", name, upstream, err)
	}
	return &Proxy{p: p}, nil
}

// Addr is the proxy's address, "127.0.0.1:PORT"; it stays the same across
// cuts and heals.
func (p *Proxy) Addr() string {
	p.p.Lock()
	defer p.p.Unlock()
	return p.p.Listen
}

// Cut closes every connection through the proxy and refuses new ones.
func (p *Proxy) Cut() { p.p.Stop() }

// Heal accepts connections again on the same port. It tries for up to 3 s
// when the port is not free again at once.
func (p *Proxy) Heal() error {
	var err error
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = p.p.Start(); err == nil || err == toxiproxy.ErrProxyAlreadyStarted {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("heal proxy %s on %s: %w", p.p.Name, p.Addr(), err)
		}
	}
}

// Close stops the proxy for good.
func (p *Proxy) Close() { p.p.Stop() }
