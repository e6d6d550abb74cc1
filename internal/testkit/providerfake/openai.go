package providerfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// openAI is the Chat Completions wire.
type openAI struct{}

func (openAI) name() string { return OpenAI }

func (openAI) parse(body []byte) (request, error) {
	var b struct {
		Model         string            `json:"model"`
		Messages      []json.RawMessage `json:"messages"`
		Tools         []json.RawMessage `json:"tools"`
		Stream        bool              `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return request{}, fmt.Errorf("the body is not a chat completion request: %v", err)
	}
	if b.Model == "" {
		return request{}, errors.New("no model: want a model name, e.g. gpt-4o-mini")
	}
	if len(b.Messages) == 0 {
		return request{}, errors.New("no messages: want at least one")
	}
	req := request{model: b.Model, stream: b.Stream, includeUsage: b.StreamOptions != nil && b.StreamOptions.IncludeUsage}
	// OpenAI's cache prefix is the tools, then the messages in order.
	for i, raw := range b.Tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || t.Function.Name == "" {
			return request{}, fmt.Errorf("tools[%d] is not a function tool with a name", i)
		}
		if i == 0 {
			req.tool, req.topic = t.Function.Name, hasTopic(t.Function.Parameters)
		}
		c, _ := canonical(raw)
		req.segs = append(req.segs, segment{json: c})
	}
	for i, raw := range b.Messages {
		var m struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Role == "" {
			return request{}, fmt.Errorf("messages[%d] has no role: want system, developer, user, assistant or tool", i)
		}
		if m.Role == "tool" {
			req.toolResults++
		}
		c, _ := canonical(raw)
		req.segs = append(req.segs, segment{json: c})
	}
	return req, nil
}

func (openAI) cached(c *prefixCache, req request, hashes [][32]byte, toks []int64, min int64, now time.Time) (int64, int64) {
	return c.openAICached(hashes, toks, min, now), 0
}

func (openAI) limitHeaders(h http.Header, l *limiter, u usage, _ time.Time) {
	h.Set("x-ratelimit-limit-requests", strconv.FormatInt(l.rpm, 10))
	h.Set("x-ratelimit-remaining-requests", strconv.FormatInt(max(l.rpm-u.requests, 0), 10))
	h.Set("x-ratelimit-reset-requests", resetOpenAI(u.resetRequests))
	h.Set("x-ratelimit-limit-tokens", strconv.FormatInt(l.tpm, 10))
	h.Set("x-ratelimit-remaining-tokens", strconv.FormatInt(max(l.tpm-u.tokens, 0), 10))
	h.Set("x-ratelimit-reset-tokens", resetOpenAI(u.resetTokens))
}

func (openAI) fail(w http.ResponseWriter, status int, kind, msg string) {
	var code any
	if status == http.StatusTooManyRequests {
		code = "rate_limit_exceeded"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": code}})
}

func (openAI) limitMessage(model string, r *refusal, limit int, used, requested int64) string {
	unit := "requests per min (RPM)"
	if r.kind == "tokens" {
		unit = "tokens per min (TPM)"
	}
	if r.wait == 0 {
		return fmt.Sprintf("Request too large for %s in organization org-providerfake on %s: Limit %d, Requested %d. The input or output tokens must be reduced in order to run successfully.", model, unit, limit, requested)
	}
	return fmt.Sprintf("Rate limit reached for %s in organization org-providerfake on %s: Limit %d, Used %d, Requested %d. Please try again in %v.", model, unit, limit, used, requested, r.wait.Round(time.Millisecond))
}

func (openAI) usage(t tokens) map[string]any {
	return map[string]any{
		"prompt_tokens": t.in, "completion_tokens": t.out, "total_tokens": t.in + t.out,
		"prompt_tokens_details":     map[string]any{"cached_tokens": t.cacheRead, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

func (o openAI) answer(w http.ResponseWriter, req request, rep reply, t tokens) {
	id, created := "chatcmpl-"+rep.id, time.Now().Unix()
	finish := "stop"
	if rep.tool != "" {
		finish = "tool_calls"
	}
	if !req.stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
		if rep.tool != "" {
			msg["tool_calls"] = []any{map[string]any{"id": "call_" + rep.toolID, "type": "function", "function": map[string]any{"name": rep.tool, "arguments": rep.args}}}
		} else {
			msg["content"] = rep.text
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.model,
			"choices":      []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":        o.usage(t),
			"service_tier": "default", "system_fingerprint": "fp_providerfake",
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		sse(w, "", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.model,
			"service_tier": "default", "system_fingerprint": "fp_providerfake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
			"usage":   nil,
		})
	}
	if rep.tool != "" {
		chunk(map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": "call_" + rep.toolID, "type": "function", "function": map[string]any{"name": rep.tool, "arguments": ""}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": rep.args}}}}, nil)
	} else {
		chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
		for _, p := range pieces(rep.text) {
			chunk(map[string]any{"content": p}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if req.includeUsage {
		sse(w, "", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.model,
			"service_tier": "default", "system_fingerprint": "fp_providerfake",
			"choices": []any{}, "usage": o.usage(t),
		})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
