package providerfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// anthropic is the Messages wire.
type anthropic struct{}

func (anthropic) name() string { return Anthropic }

func (anthropic) parse(body []byte) (request, error) {
	var b struct {
		Model     string            `json:"model"`
		MaxTokens int64             `json:"max_tokens"`
		System    json.RawMessage   `json:"system"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     []json.RawMessage `json:"tools"`
		Stream    bool              `json:"stream"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return request{}, fmt.Errorf("the body is not a messages request: %v", err)
	}
	switch {
	case b.Model == "":
		return request{}, errors.New("model: Field required")
	case b.MaxTokens <= 0:
		return request{}, errors.New("max_tokens: want a positive number")
	case len(b.Messages) == 0:
		return request{}, errors.New("messages: want at least one message")
	}
	req := request{model: b.Model, stream: b.Stream}
	// Anthropic's cache prefix is the tools, then system, then messages;
	// a breakpoint is a block marked with cache_control.
	for i, raw := range b.Tools {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
			return request{}, fmt.Errorf("tools.%d: want a tool with a name and an input_schema", i)
		}
		if i == 0 {
			req.tool, req.topic = t.Name, hasTopic(t.InputSchema)
		}
		c, mark := canonical(raw)
		req.segs = append(req.segs, segment{json: c, breakpoint: mark})
	}
	sys, err := blocks(b.System)
	if err != nil {
		return request{}, fmt.Errorf("system: %v", err)
	}
	for _, raw := range sys {
		c, mark := canonical(raw)
		req.segs = append(req.segs, segment{json: c, breakpoint: mark})
	}
	for i, raw := range b.Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || (m.Role != "user" && m.Role != "assistant") {
			return request{}, fmt.Errorf("messages.%d.role: want user or assistant", i)
		}
		bs, err := blocks(m.Content)
		if err != nil || len(bs) == 0 {
			return request{}, fmt.Errorf("messages.%d.content: want a string or a list of content blocks", i)
		}
		for _, raw := range bs {
			var k struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(raw, &k)
			if k.Type == "tool_result" {
				req.toolResults++
			}
			c, mark := canonical(raw)
			// The role is part of the prompt: the same block from the
			// other side is another prefix.
			req.segs = append(req.segs, segment{json: append([]byte(m.Role+":"), c...), breakpoint: mark})
		}
	}
	return req, nil
}

// blocks reads content that is either a string (one text block) or a
// list of blocks; absent content is no block.
func blocks(raw json.RawMessage) ([]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}, nil
	}
	var bs []json.RawMessage
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, errors.New("want a string or a list of content blocks")
	}
	return bs, nil
}

func (anthropic) cached(c *prefixCache, req request, hashes [][32]byte, toks []int64, min int64, now time.Time) (int64, int64) {
	return c.anthropicCached(req.segs, hashes, toks, min, now)
}

func (anthropic) limitHeaders(h http.Header, l *limiter, u usage, now time.Time) {
	at := func(d time.Duration) string { return now.Add(d).UTC().Truncate(time.Second).Format(time.RFC3339) }
	set := func(kind string, limit, used int64, reset time.Duration) {
		h.Set("anthropic-ratelimit-"+kind+"-limit", strconv.FormatInt(limit, 10))
		h.Set("anthropic-ratelimit-"+kind+"-remaining", strconv.FormatInt(max(limit-used, 0), 10))
		h.Set("anthropic-ratelimit-"+kind+"-reset", at(reset))
	}
	set("requests", l.rpm, u.requests, u.resetRequests)
	set("tokens", l.tpm, u.tokens, u.resetTokens)
	set("input-tokens", l.tpm, u.inTokens, u.resetTokens)
	set("output-tokens", l.tpm, u.outTokens, u.resetTokens)
}

func (anthropic) fail(w http.ResponseWriter, status int, kind, msg string) {
	if status == http.StatusTooManyRequests {
		kind = "rate_limit_error"
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func (anthropic) limitMessage(_ string, r *refusal, limit int, _, requested int64) string {
	unit := "requests"
	if r.kind == "tokens" {
		unit = "tokens"
	}
	if r.wait == 0 {
		return fmt.Sprintf("This request (%d tokens) is larger than the rate limit for your organization of %d tokens per minute.", requested, limit)
	}
	return fmt.Sprintf("This request would exceed the rate limit for your organization of %d %s per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.", limit, unit)
}

func (anthropic) usage(t tokens, out int64) map[string]any {
	return map[string]any{
		"input_tokens":                t.in - t.cacheRead - t.cacheWrite,
		"cache_creation_input_tokens": t.cacheWrite,
		"cache_read_input_tokens":     t.cacheRead,
		"cache_creation":              map[string]any{"ephemeral_5m_input_tokens": t.cacheWrite, "ephemeral_1h_input_tokens": 0},
		"output_tokens":               out,
		"service_tier":                "standard",
	}
}

func (a anthropic) answer(w http.ResponseWriter, req request, rep reply, t tokens) {
	id := "msg_" + rep.id
	stop := "end_turn"
	var content []any
	if rep.tool != "" {
		stop = "tool_use"
		content = []any{map[string]any{"type": "tool_use", "id": "toolu_" + rep.toolID, "name": rep.tool, "input": json.RawMessage(rep.args)}}
	} else {
		content = []any{map[string]any{"type": "text", "text": rep.text}}
	}
	if !req.stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": a.usage(t, t.out),
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": a.usage(t, 1)}})
	if rep.tool != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": "toolu_" + rep.toolID, "name": rep.tool, "input": map[string]any{}}})
		sse(w, "ping", map[string]any{"type": "ping"})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": rep.args}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "ping", map[string]any{"type": "ping"})
		for _, p := range pieces(rep.text) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	u := a.usage(t, t.out)
	delete(u, "cache_creation")
	delete(u, "service_tier")
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": u})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
