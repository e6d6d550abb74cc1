package providerfake

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Server is the fake provider, an http.Handler: POST /v1/chat/completions
// (OpenAI), POST /v1/messages (Anthropic), GET /stats. It is safe for
// concurrent use; every client shares its limits and its caches.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	mu    sync.Mutex
	start time.Time
	lim   limiter
	cache prefixCache
	seq   int64
	stats map[string]*ProviderStats
	peakR int64 // most requests counted in the window at once
	peakT int64 // most tokens counted in the window at once
}

// New returns a Server; an error names the setting that is wrong.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:   cfg,
		mux:   http.NewServeMux(),
		start: cfg.Now(),
		lim:   limiter{rpm: int64(cfg.RPM), tpm: int64(cfg.TPM), window: cfg.Window},
		cache: prefixCache{ttl: cfg.CacheTTL},
		stats: map[string]*ProviderStats{OpenAI: {}, Anthropic: {}},
	}
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, openAI{}) })
	s.mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, anthropic{}) })
	s.mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
	})
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// The providers' names in Stats and in the log.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Stats is what GET /stats answers.
type Stats struct {
	RPM     int     `json:"rpm_limit"`
	TPM     int     `json:"tpm_limit"`
	Elapsed float64 `json:"elapsed_seconds"`
	// PeakWindowRequests and PeakWindowTokens are the most requests and
	// tokens the window ever counted at once: never above the limits.
	PeakWindowRequests int64                     `json:"peak_window_requests"`
	PeakWindowTokens   int64                     `json:"peak_window_tokens"`
	Providers          map[string]*ProviderStats `json:"providers"`
}

// ProviderStats counts one API's traffic.
type ProviderStats struct {
	Requests     int64 `json:"requests"`     // answered (200)
	RateLimited  int64 `json:"rate_limited"` // answered 429
	BadRequests  int64 `json:"bad_requests"` // answered 400
	InputTokens  int64 `json:"input_tokens"` // the whole prompts, cached parts included
	OutputTokens int64 `json:"output_tokens"`
	CachedTokens int64 `json:"cached_tokens"`      // read from the prompt cache
	CacheWritten int64 `json:"cache_write_tokens"` // written to it (Anthropic)
	// PerMinute counts by minute of the run, from its start.
	PerMinute []Minute `json:"per_minute"`
}

// Minute is one minute of the run.
type Minute struct {
	Requests    int64 `json:"requests"`
	RateLimited int64 `json:"rate_limited"`
	Tokens      int64 `json:"tokens"`
}

// Stats returns a copy of the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{RPM: s.cfg.RPM, TPM: s.cfg.TPM, Elapsed: s.cfg.Now().Sub(s.start).Seconds(),
		PeakWindowRequests: s.peakR, PeakWindowTokens: s.peakT, Providers: map[string]*ProviderStats{}}
	for k, v := range s.stats {
		c := *v
		c.PerMinute = append([]Minute{}, v.PerMinute...)
		st.Providers[k] = &c
	}
	return st
}

// minute returns the provider's counts for the minute of now.
func (p *ProviderStats) minute(start, now time.Time) *Minute {
	i := int(now.Sub(start) / time.Minute)
	for len(p.PerMinute) <= i {
		p.PerMinute = append(p.PerMinute, Minute{})
	}
	return &p.PerMinute[i]
}

// request is a parsed request, whichever the API.
type request struct {
	model        string
	segs         []segment // the prompt, in cache order
	toolResults  int       // tool results the conversation holds
	tool         string    // the first offered tool's name, "" when none
	topic        bool      // whether its schema has a string property topic
	stream       bool
	includeUsage bool // OpenAI's stream_options.include_usage
}

// reply is the fake model's answer.
type reply struct {
	id         string
	text       string // the final answer, when there is no tool call
	toolID     string
	tool, args string
	out        int64 // output tokens
}

// tokens is what a served request reports.
type tokens struct {
	in, out, cacheRead, cacheWrite int64
}

// api is what differs between OpenAI's wire and Anthropic's.
type api interface {
	name() string
	parse(body []byte) (request, error)
	// cached applies the API's prompt-cache rule.
	cached(c *prefixCache, req request, hashes [][32]byte, toks []int64, min int64, now time.Time) (read, written int64)
	// limitHeaders sets the API's rate-limit headers.
	limitHeaders(h http.Header, l *limiter, u usage, now time.Time)
	fail(w http.ResponseWriter, status int, kind, msg string)
	// limitMessage is the message of a 429's body, as the provider words it.
	limitMessage(model string, r *refusal, limit int, used, requested int64) string
	answer(w http.ResponseWriter, req request, rep reply, t tokens)
}

// serve answers one model request: parse, decide the reply, admit it under
// the limits, apply the cache rule, answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, a api) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 32<<20))
	if err != nil {
		a.fail(w, http.StatusBadRequest, "invalid_request_error", "the body could not be read: "+err.Error())
		return
	}
	req, err := a.parse(body)
	s.mu.Lock()
	now := s.cfg.Now()
	st := s.stats[a.name()]
	if err != nil {
		st.BadRequests++
		s.mu.Unlock()
		s.logf("%s 400 %v", a.name(), err)
		a.fail(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.seq++
	rep := s.decide(req, s.seq)
	hashes, toks := prefixes(a.name()+"\x00"+req.model, req.segs)
	in := int64(1)
	if n := len(toks); n > 0 {
		in = max(toks[n-1], 1)
	}
	refused, u := s.lim.admit(now, in, rep.out)
	a.limitHeaders(w.Header(), &s.lim, u, now)
	m := st.minute(s.start, now)
	if refused != nil {
		st.RateLimited++
		m.RateLimited++
		s.mu.Unlock()
		if refused.wait > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(refused.wait.Seconds())), 10))
		}
		msg := a.limitMessage(req.model, refused, s.limitOf(refused.kind), s.usedOf(refused.kind, u), s.requestedOf(refused.kind, in+rep.out))
		s.logf("%s 429 %s in=%d out=%d retry_after=%v", a.name(), refused.kind, in, rep.out, refused.wait.Round(time.Millisecond))
		a.fail(w, http.StatusTooManyRequests, refused.kind, msg)
		return
	}
	s.peakR, s.peakT = max(s.peakR, u.requests), max(s.peakT, u.tokens)
	read, written := a.cached(&s.cache, req, hashes, toks, int64(s.cfg.MinCacheTokens), now)
	st.Requests++
	st.InputTokens += in
	st.OutputTokens += rep.out
	st.CachedTokens += read
	st.CacheWritten += written
	m.Requests++
	m.Tokens += in + rep.out
	s.mu.Unlock()
	s.logf("%s 200 stream=%t in=%d out=%d cached=%d written=%d tool_results=%d tool=%q", a.name(), req.stream, in, rep.out, read, written, req.toolResults, rep.tool)
	a.answer(w, req, rep, tokens{in: in, out: rep.out, cacheRead: read, cacheWrite: written})
}

func (s *Server) limitOf(kind string) int {
	if kind == "requests" {
		return s.cfg.RPM
	}
	return s.cfg.TPM
}

func (s *Server) usedOf(kind string, u usage) int64 {
	if kind == "requests" {
		return u.requests
	}
	return u.tokens
}

func (s *Server) requestedOf(kind string, toks int64) int64 {
	if kind == "requests" {
		return 1
	}
	return toks
}

// decide is the fake model: a call of the first offered tool until the
// conversation holds Turns tool results, then a text answer naming how
// many it read.
func (s *Server) decide(req request, seq int64) reply {
	rep := reply{id: fmt.Sprintf("fake%06d", seq)}
	if req.tool != "" && req.toolResults < s.cfg.Turns {
		rep.tool, rep.args = req.tool, "{}"
		if req.topic {
			rep.args = `{"topic":"providerfake"}`
		}
		rep.toolID = fmt.Sprintf("fake_%d_%06d", req.toolResults+1, seq)
		rep.out = estimate(int64(len(rep.tool) + len(rep.args)))
		return rep
	}
	rep.text = fmt.Sprintf("I read %d tool results.", req.toolResults)
	rep.out = estimate(int64(len(rep.text)))
	return rep
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "providerfake: "+format+"\n", args...)
	}
}

// pieces splits a text into the deltas a stream sends: words with their
// leading space.
func pieces(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	return append(out, text[start:])
}

// canonical compacts JSON, dropping a top-level cache_control field and
// sorting an object's keys, so that equal prompts hash alike.
func canonical(raw json.RawMessage) ([]byte, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		_, marked := obj["cache_control"]
		delete(obj, "cache_control")
		b, _ := json.Marshal(obj)
		return b, marked
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw, false
	}
	b, _ := json.Marshal(v)
	return b, false
}

// hasTopic reports whether a JSON schema has a string property topic.
func hasTopic(schema json.RawMessage) bool {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	p, ok := s.Properties["topic"]
	return ok && p.Type == "string"
}

// sse writes one server-sent event (no event line when event is "").
func sse(w io.Writer, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// resetOpenAI formats a wait as OpenAI's x-ratelimit-reset-* do: "12s",
// "1m30s", "250ms".
func resetOpenAI(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
