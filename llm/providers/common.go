package providers

import (
	"github.com/agentrun/agentrun/llm"

	"github.com/agentrun/agentrun/llm/internal/safetext"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// What the two HTTP providers (OpenAI, Anthropic) share: the rules of their
// configurations, the core every request uses, and an answer given whole.

// common is what the OpenAI and Anthropic configurations share, for the
// rules they share and for describing them without the key.
type common struct {
	kind, model, key, baseURL, baseURLVar string
	maxTokens                             int64
	timeout, idle                         time.Duration
	settings                              agent.ModelSettings
}

// check applies the rules every provider's configuration follows: a base
// URL that is one, max tokens set once, timeouts not negative, settings
// the provider takes.
func (a common) check() error {
	if a.baseURL != "" {
		if err := checkBaseURL(a.baseURL); err != nil {
			return fmt.Errorf("%s: %s: %w", a.kind, a.baseURLVar, err)
		}
	}
	if a.maxTokens > 0 && a.settings.MaxTokens > 0 {
		return fmt.Errorf("%s: max tokens are set twice, %d by AGENTRUN_MAX_TOKENS and %d by max_tokens in the models file: keep one", a.kind, a.maxTokens, a.settings.MaxTokens)
	}
	if a.timeout < 0 {
		return fmt.Errorf("%s: Timeout is %v: want a positive duration, or 0 for %v", a.kind, a.timeout, llm.DefaultTimeout)
	}
	if a.idle < 0 {
		return fmt.Errorf("%s: IdleTimeout is %v: want a positive duration, or 0 for %v", a.kind, a.idle, llm.DefaultIdleTimeout)
	}
	if err := llm.CheckSettings(a.kind, a.settings); err != nil {
		return fmt.Errorf("%s:%s: %w", a.kind, a.model, err)
	}
	return nil
}

// String describes the configuration without its key.
func (a common) String() string {
	return fmt.Sprintf("%s:%s (base URL %q, key %s)", a.kind, a.model, safetext.RedactURL(a.baseURL), safetext.KeyState(a.key))
}

// checkBaseURL accepts an absolute http or https URL.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", safetext.RedactURL(s))
	}
	return nil
}

func statusOf(res *http.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}

// base is what each HTTP provider holds besides its SDK client: its name,
// the settings and timeouts of every request, and the key's scrubber, the
// only place the key lives. It gives the provider Name, String and GoString.
type base struct {
	kind, model string
	settings    agent.ModelSettings
	timeout     time.Duration
	idle        time.Duration
	scrub       func(string) string // removes the key from error messages
}

// base is the provider core of a checked configuration; settings are what
// every request sends and every reply records.
func (a common) base(settings agent.ModelSettings) base {
	return base{kind: a.kind, model: a.model, settings: settings, timeout: a.timeout, idle: a.idle, scrub: scrubber(a.key)}
}

// Name implements llm.Provider.
func (b base) Name() string { return b.kind + ":" + b.model }

// String is Name: printing a provider never shows its key.
func (b base) String() string { return b.Name() }

// GoString is Name.
func (b base) GoString() string { return b.Name() }

// complete makes one request answered whole, under the request timeout:
// send makes it, its raw response into res and body. The body comes back
// raw and is decoded here into a T (what names a T), so that a body that
// does not parse (a server fault) is told apart from one that did not
// arrive whole (a network fault); reply converts it.
func complete[T any](ctx context.Context, b base, what string, send func(ctx context.Context, res **http.Response, body *[]byte) error, reply func(T, int) (agent.ModelReply, error)) (agent.ModelReply, error) {
	var res *http.Response
	var body []byte
	w := requestWatch(ctx, b.timeout)
	defer w.stop()
	err := send(w.rctx, &res, &body)
	noteLeft(ctx, res)
	if err != nil {
		return agent.ModelReply{}, callError(w, b.Name(), err, res, b.scrub)
	}
	v, err := decodeWhole[T](b, res, body, what)
	if err != nil {
		return agent.ModelReply{}, err
	}
	return reply(v, statusOf(res))
}

// unstreamed reads the whole answer of a server that ignored the request to
// stream, as complete does, and passes its text to text in one piece.
func unstreamed[T any](w *watch, b base, res *http.Response, what string, reply func(T, int) (agent.ModelReply, error), text func(string)) (agent.ModelReply, error) {
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return agent.ModelReply{}, callError(w, b.Name(), err, res, b.scrub)
	}
	v, err := decodeWhole[T](b, res, body, what)
	if err != nil {
		return agent.ModelReply{}, err
	}
	r, err := reply(v, statusOf(res))
	if err != nil {
		return agent.ModelReply{}, err
	}
	if r.Message.Content != "" {
		text(r.Message.Content)
	}
	return r, nil
}

// decodeWhole decodes the body of an answer given whole into a T; what
// names a T in the error of a body that does not parse.
func decodeWhole[T any](b base, res *http.Response, body []byte, what string) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, &llm.Error{Class: llm.ClassServer, StatusCode: statusOf(res), Message: b.scrub("the server's answer is not " + what + ": " + err.Error())}
	}
	return v, nil
}

// extraFields is the settings' extra fields as values an SDK's
// SetExtraFields marshals as they are.
func extraFields(s agent.ModelSettings) map[string]any {
	if len(s.Extra) == 0 {
		return nil
	}
	m := make(map[string]any, len(s.Extra))
	for k, v := range s.Extra {
		m[k] = v
	}
	return m
}
