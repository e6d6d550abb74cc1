package providers

import (
	"github.com/agentrun/agentrun/llm"

	"github.com/agentrun/agentrun/llm/internal/safetext"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The helpers below turn a failed HTTP call of a provider into the error its
// Complete or Stream returns. They hold no provider's wire format beyond the shapes of
// JSON error bodies that OpenAI, Anthropic and the OpenAI-compatible servers
// (vLLM, Ollama, llama.cpp, LM Studio) send.

// callError classifies err, the failure of one SDK call made under the
// watch w. res is the HTTP response the SDK saw, if any (its body already
// read and replaced by the SDK). The caller's own cancellation comes back
// wrapped, as it is; a request that a timeout cut is a llm.ClassTimeout
// *llm.Error (watch.cut); everything else is an *llm.Error whose Message went
// through scrub.
func callError(w *watch, name string, err error, res *http.Response, scrub func(string) string) error {
	if cerr := w.ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %w", name, cerr)
	}
	if e := w.cut(); e != nil {
		return e
	}
	switch {
	case res != nil && res.StatusCode >= 400:
		return httpError(res, scrub, time.Now())
	case isNetworkError(err):
		return &llm.Error{Class: llm.ClassNetwork, Message: scrub(err.Error())}
	case res != nil:
		// The server answered but the SDK could not take the answer.
		return &llm.Error{Class: llm.ClassServer, StatusCode: res.StatusCode, Message: scrub("the server's answer could not be read: " + err.Error())}
	default:
		// No request went out: the SDK refused it. Trying again cannot help.
		return &llm.Error{Class: llm.ClassBadRequest, Message: scrub("the request could not be sent: " + err.Error())}
	}
}

// isNetworkError reports whether err is a failure to exchange a request and
// a whole response: refused or dropped connections, DNS failures, timeouts
// (the caller's own context has been checked before).
func isNetworkError(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// httpError classifies an error response by its status and body.
func httpError(res *http.Response, scrub func(string) string, now time.Time) *llm.Error {
	var body []byte
	if res.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(res.Body, 1<<16))
	}
	msg, code, typ := parseErrorBody(body)
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
		if msg == "" {
			msg = "the server answered with an error"
		}
	}
	class, msg := refine(statusClass(res.StatusCode), code, typ, msg)
	msg = scrub(msg)
	if asked := rawRetryAfter(res.Header, now); asked > llm.MaxRetryAfter {
		// People see what the server asked for, and what is done instead.
		msg += fmt.Sprintf(" (the server asked to wait %s before trying again; agentrun waits at most %s, its cap on Retry-After)", asked.Round(time.Second), llm.MaxRetryAfter)
	}
	return &llm.Error{Class: class, StatusCode: res.StatusCode, RetryAfter: retryAfter(res.Header, now), Message: msg}
}

// refine makes a bad request that says the conversation does not fit the
// model's context window a llm.ClassContextLength, and returns the message to
// show.
func refine(class llm.Class, code, typ, msg string) (llm.Class, string) {
	if class == llm.ClassBadRequest && contextTooLong(code, typ, msg) {
		return llm.ClassContextLength, "the conversation is longer than the model's context window: " + msg
	}
	return class, msg
}

// eventError classifies an error event that arrived inside a stream, after
// the HTTP status 200: an {"error":{...}} chunk of an OpenAI-compatible
// server, or Anthropic's `event: error` ({"type":"error","error":{...}}).
// It has the class of the HTTP error of the same kind (errorTypeClass),
// no status and no Retry-After.
func eventError(data []byte, scrub func(string) string) *llm.Error {
	msg, code, typ := parseErrorBody(data)
	if msg == "" {
		msg = "the server sent an error event"
	}
	class, msg := refine(errorTypeClass(code, typ), code, typ, msg)
	return &llm.Error{Class: class, Message: scrub("error event in the stream: " + msg)}
}

// errorTypeClass sorts an error by the code and type of its body, for an
// error that came without an HTTP error status. The code counts first
// (OpenAI's 401 has type invalid_request_error and code invalid_api_key); a
// code that is an HTTP status (vLLM, llama.cpp) is sorted as that status.
// An error of no known kind is a ClassServer: the server failed while it
// answered, and trying again may succeed.
func errorTypeClass(code, typ string) llm.Class {
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
		return statusClass(n)
	}
	for _, s := range []string{code, typ} {
		switch s {
		case "rate_limit_error", "rate_limit_exceeded", "requests", "tokens", "insufficient_quota":
			return llm.ClassRateLimit
		case "authentication_error", "permission_error", "invalid_api_key":
			return llm.ClassAuth
		case "not_found_error", "model_not_found":
			return llm.ClassNotFound
		case "invalid_request_error", "request_too_large", "BadRequestError", "context_length_exceeded", "exceed_context_size_error":
			return llm.ClassBadRequest
		case "overloaded_error", "api_error", "server_error", "timeout_error":
			return llm.ClassServer
		}
	}
	return llm.ClassServer
}

// statusClass sorts an HTTP error status.
func statusClass(status int) llm.Class {
	switch {
	case status == http.StatusTooManyRequests:
		return llm.ClassRateLimit
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ClassAuth
	case status == http.StatusNotFound:
		return llm.ClassNotFound
	case status == http.StatusRequestTimeout:
		return llm.ClassNetwork
	case status == http.StatusConflict || status >= 500: // 529 is Anthropic's "overloaded"
		return llm.ClassServer
	case status >= 400:
		return llm.ClassBadRequest
	}
	return llm.ClassServer
}

// parseErrorBody reads the message, code and type of a JSON error body:
// {"error":{"message":...,"type":...,"code":...}} (OpenAI, Anthropic,
// llama.cpp), {"error":"..."} (Ollama), {"message":...,"type":...,"code":400}
// (vLLM) or {"detail":"..."}. A body that is not JSON gives its text, unless
// it looks like an HTML page.
func parseErrorBody(body []byte) (msg, code, typ string) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		text := strings.TrimSpace(string(body))
		if text == "" || strings.HasPrefix(text, "<") {
			return "", "", ""
		}
		return safetext.Truncate(text, 500), "", ""
	}
	var inner struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	var s string
	switch {
	case json.Unmarshal(top.Error, &inner) == nil && (inner.Message != "" || inner.Type != ""):
		return inner.Message, jsonText(inner.Code), inner.Type
	case json.Unmarshal(top.Error, &s) == nil && s != "":
		return s, "", ""
	case top.Message != "":
		return top.Message, jsonText(top.Code), top.Type
	case json.Unmarshal(top.Detail, &s) == nil && s != "":
		return s, "", ""
	case len(top.Detail) > 0:
		return safetext.Truncate(string(top.Detail), 500), "", ""
	}
	return "", "", ""
}

// jsonText is a JSON string's value, or another JSON value's text.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// contextTooLong reports whether a 400 says the conversation does not fit
// the model's context window, in the words of OpenAI
// (context_length_exceeded), Anthropic ("prompt is too long", "exceed
// context limit"), vLLM ("maximum context length") and llama.cpp
// (exceed_context_size_error).
func contextTooLong(code, typ, msg string) bool {
	if code == "context_length_exceeded" || typ == "exceed_context_size_error" {
		return true
	}
	msg = strings.ToLower(msg)
	for _, s := range []string{"maximum context length", "context length exceeded", "context_length_exceeded", "prompt is too long", "exceed context limit", "exceeds the available context size", "context window"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// checkUsage refuses a reply whose token counts include a negative one: a
// broken or hostile server's, which would lower the run's usage and so
// lift its token budget. Such an answer is a llm.ClassServer error (retried).
func checkUsage(status int, counts ...int64) error {
	for _, n := range counts {
		if n < 0 {
			return &llm.Error{Class: llm.ClassServer, StatusCode: status, Message: fmt.Sprintf("the server's answer reports a negative token count (%d); want counts of 0 or more", n)}
		}
	}
	return nil
}

// scrubber returns a function that removes secret from a text. A provider
// passes every error message through it (a server may echo the request's
// headers in its error body), and keeps its key nowhere else, so that no
// way of printing a provider can show the key.
func scrubber(secret string) func(string) string {
	return func(s string) string {
		if secret == "" {
			return s
		}
		return strings.ReplaceAll(s, secret, "[redacted]")
	}
}
