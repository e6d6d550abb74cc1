package llm

import (
	"context"
	"math"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestPricedReplies: a model with a price in its settings prices every
// reply, complete or streamed, still streams, and sends no price.
func TestPricedReplies(t *testing.T) {
	s, err := ParseModels("models.json", []byte(`{"scripted": {"temperature": 0.2, "price": {"input": 1000, "output": 2000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := NewScriptedSpec("scripted", s["scripted"])
	if err != nil {
		t.Fatal(err)
	}
	p := Wrap(sp, Options{Settings: s["scripted"]})
	st, ok := p.(Streamer)
	if !ok {
		t.Fatal("the priced scripted model does not stream")
	}
	req := agent.ModelRequest{Messages: agent.UserMessages("file a ticket for read access")}
	for name, call := range map[string]func() (agent.ModelReply, error){
		"complete": func() (agent.ModelReply, error) { return p.Complete(context.Background(), req) },
		"stream":   func() (agent.ModelReply, error) { return st.Stream(context.Background(), req, func(string) {}) },
	} {
		r, err := call()
		if err != nil {
			t.Fatal(err)
		}
		want := (float64(r.Usage.InputTokens)*1000 + float64(r.Usage.OutputTokens)*2000) / 1e6
		if r.Usage.Cost == 0 || math.Abs(r.Usage.Cost-want) > 1e-15 {
			t.Fatalf("%s: cost %v for %+v, want %v", name, r.Usage.Cost, r.Usage, want)
		}
		if r.Settings == nil || r.Settings.Price != nil || r.Settings.Temperature == nil {
			t.Fatalf("%s: sent settings %+v: want the temperature and no price", name, r.Settings)
		}
	}
	if p := Wrap(sp, Options{}); p != Provider(sp) {
		t.Fatal("an unpriced model is not the provider itself")
	}
}
