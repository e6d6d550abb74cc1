package llm

import (
	"context"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/ratelimit"
)

// Wrap gives p what o's settings ask of every provider: with a price,
// every reply's usage carries its cost (Priced); with limits and
// o.Limiter, every call waits for its slot (Limited). Without either it
// is p itself.
func Wrap(p Provider, o Options) Provider {
	if o.Settings.Price != nil {
		p = Priced(p, *o.Settings.Price)
	}
	if o.Settings.Limits != nil && o.Limiter != nil {
		p = Limited(p, o.Limiter, ratelimit.Limit(*o.Settings.Limits), o)
	}
	return p
}

// Priced returns p with every reply's usage priced at price
// (agent.Usage.Cost): the cost is part of the reply, so the engine records
// it with the step. A p that streams still does.
func Priced(p Provider, price agent.Price) Provider {
	pp := priced{Provider: p, price: price}
	if s, ok := p.(Streamer); ok {
		return pricedStreamer{pp, s}
	}
	return pp
}

type priced struct {
	Provider
	price agent.Price
}

func (p priced) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	r, err := p.Provider.Complete(ctx, req)
	if err == nil {
		r.Usage.Cost = p.price.Cost(r.Usage)
	}
	return r, err
}

type pricedStreamer struct {
	priced
	s Streamer
}

func (p pricedStreamer) Stream(ctx context.Context, req agent.ModelRequest, text func(delta string)) (agent.ModelReply, error) {
	r, err := p.s.Stream(ctx, req, text)
	if err == nil {
		r.Usage.Cost = p.price.Cost(r.Usage)
	}
	return r, err
}
