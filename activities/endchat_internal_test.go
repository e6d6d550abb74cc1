package activities

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/tracing"
)

// TestChatSpanCacheTokens: the chat span carries the prompt cache's
// tokens under the GenAI conventions' names when the reply reports them,
// and leaves them out when it reports none.
func TestChatSpanCacheTokens(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	a := &Activities{}
	for _, u := range []agent.Usage{
		{InputTokens: 2095, OutputTokens: 503, CacheReadTokens: 1805, CacheWriteTokens: 268},
		{InputTokens: 182, OutputTokens: 17},
	} {
		_, span := tracing.StartChat(t.Context(), tp.Tracer("test"), "anthropic:claude-sonnet-4-5")
		res, err := json.Marshal(agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, Content: "hi"}, FinishReason: agent.FinishStop, Usage: u, Model: "anthropic:claude-sonnet-4-5"})
		if err != nil {
			t.Fatal(err)
		}
		a.endChat(span, res, nil)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	get := func(i int) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range spans[i].Attributes {
			m[kv.Key] = kv.Value
		}
		return m
	}
	cached, plain := get(0), get(1)
	if cached[tracing.KeyInputTokens].AsInt64() != 2095 || cached[tracing.KeyCacheReadTokens].AsInt64() != 1805 || cached[tracing.KeyCacheWriteTokens].AsInt64() != 268 {
		t.Errorf("cached reply's span: %v", spans[0].Attributes)
	}
	if _, ok := plain[tracing.KeyCacheReadTokens]; ok {
		t.Errorf("a reply with no cached tokens has %s: %v", tracing.KeyCacheReadTokens, spans[1].Attributes)
	}
	if _, ok := plain[tracing.KeyCacheWriteTokens]; ok {
		t.Errorf("a reply with no cached tokens has %s: %v", tracing.KeyCacheWriteTokens, spans[1].Attributes)
	}
}
