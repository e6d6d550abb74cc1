package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// ErrNotFound is Trace's error when Jaeger has no trace of that id.
var ErrNotFound = errors.New("trace not found")

// queryTimeout bounds one request to the query API (in memory, it answers
// in milliseconds).
const queryTimeout = 10 * time.Second

// TracesLimit is the most traces Traces asks for (the query API's default
// is 100).
const TracesLimit = 10000

// Settle is how long WaitSpans and WaitTrace wait for the number of spans
// to stop changing once it reached what they wait for.
const Settle = 500 * time.Millisecond

// Trace is one trace as Jaeger stores it.
type Trace struct {
	// ID is the trace id, 32 hex digits.
	ID string
	// Spans are its spans by start time, then span id.
	Spans []Span
}

// Span is one span of a trace.
type Span struct {
	// Name is the operation name.
	Name string
	// TraceID (32 hex digits), SpanID and ParentID (16 hex digits) are the
	// span's ids and its parent's (its CHILD_OF reference), "" for a root.
	TraceID, SpanID, ParentID string
	// Service is the service.name of the process that sent it.
	Service string
	// Start and Duration, to the microsecond.
	Start    time.Time
	Duration time.Duration
	// Attrs are the span's tags: the OTLP attributes (string, bool, int64
	// or float64; an array as its JSON text) and those Jaeger adds
	// (span.kind, otel.scope.name, otel.status_code, error).
	Attrs map[string]any
	// Events are the span's events (Jaeger's logs), in order.
	Events []Event
	// Links are the span's references other than its parent (an OTLP
	// link is a FOLLOWS_FROM reference).
	Links []Link
	// Resource holds the sending process's resource attributes
	// (Jaeger's process tags).
	Resource map[string]any
	// Warnings are what Jaeger noted about the span, if anything.
	Warnings []string
}

// Event is one span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// Link is a reference from a span to another span.
type Link struct {
	// Type is Jaeger's reference type: FOLLOWS_FROM, or CHILD_OF for a
	// second parent.
	Type            string
	TraceID, SpanID string
}

// Attr returns the attribute key as text ("" when the span has none):
// fmt's %v of the value, so an int64 42 is "42".
func (s Span) Attr(key string) string {
	v, ok := s.Attrs[key]
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

// Named returns the spans of the trace named name.
func (t Trace) Named(name string) []Span {
	var out []Span
	for _, s := range t.Spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Children returns the spans of the trace whose parent is the span id.
func (t Trace) Children(id string) []Span {
	var out []Span
	for _, s := range t.Spans {
		if s.ParentID == id {
			out = append(out, s)
		}
	}
	return out
}

// Services returns the names of the services Jaeger has spans of, sorted.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	var names []string
	if err := j.get(ctx, "/api/services", nil, &names); err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// Traces returns the traces of the last two days with a span of service,
// the most recently started first as Jaeger orders them (at most
// TracesLimit).
func (j *Jaeger) Traces(ctx context.Context, service string) ([]Trace, error) {
	q := url.Values{"service": {service}, "limit": {fmt.Sprint(TracesLimit)}, "raw": {"true"}}
	var raw []apiTrace
	if err := j.get(ctx, "/api/traces", q, &raw); err != nil {
		return nil, err
	}
	traces := make([]Trace, 0, len(raw))
	for _, r := range raw {
		traces = append(traces, r.trace())
	}
	return traces, nil
}

// Trace returns the trace id (hex, as OpenTelemetry's TraceID.String()
// prints it), or an error wrapping ErrNotFound when Jaeger has none.
func (j *Jaeger) Trace(ctx context.Context, id string) (Trace, error) {
	var raw []apiTrace
	if err := j.get(ctx, "/api/traces/"+url.PathEscape(id), url.Values{"raw": {"true"}}, &raw); err != nil {
		return Trace{}, err
	}
	if len(raw) != 1 {
		return Trace{}, fmt.Errorf("trace %s: the query API returned %d traces, want 1", id, len(raw))
	}
	return raw[0].trace(), nil
}

// WaitSpans waits until Jaeger holds at least n spans of service (over all
// its traces), then until their number holds for Settle, and returns them
// by start time; the test fails when fewer than n arrived within timeout.
func (j *Jaeger) WaitSpans(t testing.TB, service string, n int, timeout time.Duration) []Span {
	t.Helper()
	var spans []Span
	j.wait(t, timeout, fmt.Sprintf("%d spans of service %s", n, service), n, func(ctx context.Context) (int, error) {
		traces, err := j.Traces(ctx, service)
		if err != nil {
			return 0, err
		}
		spans = spans[:0]
		for _, tr := range traces {
			for _, s := range tr.Spans {
				if s.Service == service {
					spans = append(spans, s)
				}
			}
		}
		return len(spans), nil
	})
	sortSpans(spans)
	return spans
}

// WaitTrace waits until Jaeger holds at least n spans of the trace id,
// then until their number holds for Settle, and returns the trace; the
// test fails when fewer than n arrived within timeout.
func (j *Jaeger) WaitTrace(t testing.TB, id string, n int, timeout time.Duration) Trace {
	t.Helper()
	var tr Trace
	j.wait(t, timeout, fmt.Sprintf("%d spans of trace %s", n, id), n, func(ctx context.Context) (int, error) {
		var err error
		tr, err = j.Trace(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return 0, nil
		}
		return len(tr.Spans), err
	})
	return tr
}

// wait polls count until it reaches n and then holds for Settle.
func (j *Jaeger) wait(t testing.TB, timeout time.Duration, what string, n int, count func(context.Context) (int, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	var err error
	for {
		var got int
		got, err = count(t.Context())
		if err == nil {
			if got != last {
				last, since = got, time.Now()
			}
			if got >= n && time.Since(since) >= Settle {
				return
			}
		}
		if time.Now().After(deadline) {
			if last >= n {
				return // still changing, but enough arrived
			}
			t.Fatalf("Jaeger: waited %s for %s: have %d (last error: %v)", timeout, what, max(last, 0), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get GETs path?q from the query API and decodes its data into out.
func (j *Jaeger) get(ctx context.Context, path string, q url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	u := j.QueryURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("query Jaeger %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("query Jaeger %s: %w", path, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("query Jaeger %s: %w", path, ErrNotFound)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != http.StatusOK || len(r.Errors) > 0 {
		return fmt.Errorf("query Jaeger %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	d := json.NewDecoder(bytes.NewReader(r.Data))
	d.UseNumber()
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("query Jaeger %s: decode: %w", path, err)
	}
	return nil
}

// The query API's JSON (Jaeger's UI model, cmd/query/app's /api/traces).
type (
	apiTrace struct {
		TraceID   string                `json:"traceID"`
		Spans     []apiSpan             `json:"spans"`
		Processes map[string]apiProcess `json:"processes"`
	}
	apiSpan struct {
		TraceID       string   `json:"traceID"`
		SpanID        string   `json:"spanID"`
		OperationName string   `json:"operationName"`
		References    []apiRef `json:"references"`
		StartTime     int64    `json:"startTime"` // µs since the epoch
		Duration      int64    `json:"duration"`  // µs
		Tags          []apiKV  `json:"tags"`
		Logs          []apiLog `json:"logs"`
		ProcessID     string   `json:"processID"`
		Warnings      []string `json:"warnings"`
	}
	apiRef struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	apiLog struct {
		Timestamp int64   `json:"timestamp"`
		Fields    []apiKV `json:"fields"`
	}
	apiKV struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	apiProcess struct {
		ServiceName string  `json:"serviceName"`
		Tags        []apiKV `json:"tags"`
	}
)

func (r apiTrace) trace() Trace {
	t := Trace{ID: traceID(r.TraceID)}
	for _, s := range r.Spans {
		p := r.Processes[s.ProcessID]
		span := Span{
			Name:     s.OperationName,
			TraceID:  traceID(s.TraceID),
			SpanID:   spanID(s.SpanID),
			Service:  p.ServiceName,
			Start:    time.UnixMicro(s.StartTime),
			Duration: time.Duration(s.Duration) * time.Microsecond,
			Attrs:    attrs(s.Tags),
			Resource: attrs(p.Tags),
			Warnings: s.Warnings,
		}
		for _, ref := range s.References {
			if ref.RefType == "CHILD_OF" && span.ParentID == "" && traceID(ref.TraceID) == span.TraceID {
				span.ParentID = spanID(ref.SpanID)
				continue
			}
			span.Links = append(span.Links, Link{Type: ref.RefType, TraceID: traceID(ref.TraceID), SpanID: spanID(ref.SpanID)})
		}
		for _, l := range s.Logs {
			ev := Event{Time: time.UnixMicro(l.Timestamp), Attrs: attrs(l.Fields)}
			if name, ok := ev.Attrs["event"].(string); ok {
				ev.Name = name
				delete(ev.Attrs, "event")
			}
			span.Events = append(span.Events, ev)
		}
		t.Spans = append(t.Spans, span)
	}
	sortSpans(t.Spans)
	return t
}

func sortSpans(spans []Span) {
	sort.Slice(spans, func(a, b int) bool {
		if !spans[a].Start.Equal(spans[b].Start) {
			return spans[a].Start.Before(spans[b].Start)
		}
		return spans[a].SpanID < spans[b].SpanID
	})
}

// attrs turns Jaeger's typed tags into Go values: string, bool, int64,
// float64 (a binary value stays its base64 text).
func attrs(kvs []apiKV) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.Value
		if n, ok := v.(json.Number); ok {
			if kv.Type == "int64" {
				if i, err := n.Int64(); err == nil {
					v = i
				}
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		m[kv.Key] = v
	}
	return m
}

// traceID pads Jaeger's trace id (which drops leading zeros) to the 32 hex
// digits OpenTelemetry prints.
func traceID(s string) string { return pad(s, 32) }

// spanID pads a span id to 16 hex digits.
func spanID(s string) string { return pad(s, 16) }

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat("0", n-len(s)) + s
}
