package providers

import (
	"github.com/agentrun/agentrun/llm"

	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// The stream-aware timeouts: real HTTP servers on loopback that stream
// recorded answers (testdata/*.sse) with a pause before each event.

// paced answers 200 with an event stream of events, each written and
// flushed after a pause of gap; after stallAfter events (when it is below
// len(events)) it sends nothing more until the client gives up.
func paced(gap time.Duration, stallAfter int, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		fl.Flush()
		for i, e := range events {
			if i == stallAfter {
				<-r.Context().Done()
				return
			}
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, e)
			fl.Flush()
		}
	}
}

// answerEvents counts the events that carry part of an answer: all but
// Anthropic's pings.
func answerEvents(events []string) int {
	n := 0
	for _, e := range events {
		if !strings.HasPrefix(e, "event: ping") {
			n++
		}
	}
	return n
}

// newIdleTest builds adapter a's provider on f with the request timeout
// whole and the idle timeout idle.
func newIdleTest(t *testing.T, a streamAdapter, f *fake, whole, idle time.Duration) llm.Streamer {
	t.Helper()
	if a.name == "openai" {
		return newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey, Timeout: whole, IdleTimeout: idle})
	}
	return newTestAnthropic(t, f, AnthropicConfig{Timeout: whole, IdleTimeout: idle})
}

// TestStreamLongerThanIdleTimeout: a streamed answer that takes several
// times the idle timeout but is never idle for as long completes whole.
func TestStreamLongerThanIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			const idle, gap = 400 * time.Millisecond, 100 * time.Millisecond
			events := sseEvents(t, a.text)
			f := newFake(t, paced(gap, len(events), events...))
			var pieces collect
			began := time.Now()
			got, err := newIdleTest(t, a, f, 30*time.Second, idle).Stream(t.Context(), userOnly, pieces.add)
			took := time.Since(began)
			if err != nil {
				t.Fatalf("a stream never idle for %v failed after %v: %v", idle, took, err)
			}
			if took < 2*idle {
				t.Fatalf("the stream took %v, want more than twice the idle timeout %v (%d events %v apart)", took, idle, len(events), gap)
			}
			if want := strings.Join(textPieces, ""); got.Message.Content != want || got.FinishReason != agent.FinishStop {
				t.Errorf("reply %q (finish %s), want %q (finish stop)", got.Message.Content, got.FinishReason, want)
			}
			if !reflect.DeepEqual([]string(pieces), textPieces) {
				t.Errorf("pieces %q, want %q", pieces, textPieces)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("server got %d requests, want 1", n)
			}
		})
	}
}

// TestStreamIdleTimeout: a stream that stalls, before its first event or
// after two pieces, is cut by the idle timeout long before the request
// timeout, with a retryable Timeout that names the idle timeout and its
// setting.
func TestStreamIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		for _, tc := range []struct {
			name   string
			stall  int // events sent before the stall
			pieces []string
			says   string
		}{
			{"before the first event", 0, nil, "before its first piece"},
			{"after two pieces", a.throughSecond, textPieces[:2], "after " + plural(answerEvents(sseEvents(t, a.text)[:a.throughSecond]), "piece") + ", "},
		} {
			t.Run(a.name+" "+tc.name, func(t *testing.T) {
				t.Parallel()
				const idle, whole = 300 * time.Millisecond, 30 * time.Second
				f := newFake(t, paced(10*time.Millisecond, tc.stall, sseEvents(t, a.text)...))
				var pieces collect
				began := time.Now()
				got, err := newIdleTest(t, a, f, whole, idle).Stream(t.Context(), userOnly, pieces.add)
				took := time.Since(began)
				e := asError(t, err)
				want := "the idle timeout cut the streamed answer: no piece for 300ms (AGENTRUN_MODEL_IDLE_TIMEOUT) " + tc.says
				if e.Class != llm.ClassTimeout || !e.Class.Retryable() || !strings.Contains(e.Message, want) {
					t.Errorf("error %q (class %s), want a retryable %s containing %q", e.Message, e.Class, llm.ClassTimeout, want)
				}
				if took < idle || took > 10*time.Second {
					t.Errorf("the stream was cut after %v, want soon after the idle timeout %v (the request timeout is %v)", took, idle, whole)
				}
				assertReply(t, got, agent.ModelReply{})
				if !reflect.DeepEqual([]string(pieces), tc.pieces) {
					t.Errorf("pieces %q, want %q", pieces, tc.pieces)
				}
			})
		}
	}
}

// TestStreamWholeAnswerTimeout: a stream that is never idle but goes on
// past the request timeout is cut by it, with a Timeout that names the
// whole-answer timeout and AGENTRUN_MODEL_TIMEOUT.
func TestStreamWholeAnswerTimeout(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			const idle, whole = 2 * time.Second, 500 * time.Millisecond
			events := sseEvents(t, a.text)
			f := newFake(t, paced(200*time.Millisecond, len(events), events...))
			began := time.Now()
			// An idle timeout above the request timeout adds nothing:
			// the request timeout cuts first.
			_, err := newIdleTest(t, a, f, whole, idle).Stream(t.Context(), userOnly, nil)
			took := time.Since(began)
			e := asError(t, err)
			if e.Class != llm.ClassTimeout || !strings.Contains(e.Message, "the whole-answer timeout cut the streamed answer after 2 pieces: no whole answer within the request timeout of 500ms (AGENTRUN_MODEL_TIMEOUT)") {
				t.Errorf("error %q (class %s), want a %s naming the whole-answer timeout after 2 pieces", e.Message, e.Class, llm.ClassTimeout)
			}
			if took < whole || took > 10*time.Second {
				t.Errorf("the stream was cut after %v, want soon after %v", took, whole)
			}
		})
	}
}

// TestIdleTimeoutNotAStreamBound: a request answered whole (Complete) has
// the request timeout alone, however short the idle timeout.
func TestIdleTimeoutNotAStreamBound(t *testing.T) {
	t.Parallel()
	slow := func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		answer(200, readTestdata(t, "openai_text.json"))(w, r)
	}
	f := newFake(t, slow)
	p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey, Timeout: 10 * time.Second, IdleTimeout: 100 * time.Millisecond})
	got, err := p.Complete(t.Context(), userOnly)
	if err != nil || got.Message.Content != strings.Join(textPieces, "") {
		t.Fatalf("Complete with a 100ms idle timeout and a server answering whole after 400ms: %q, %v; want the answer", got.Message.Content, err)
	}
}

// TestNegativeIdleTimeoutRefused: a provider refuses a negative idle
// timeout in one line that names it.
func TestNegativeIdleTimeoutRefused(t *testing.T) {
	t.Parallel()
	_, err := NewOpenAI(OpenAIConfig{Model: "x", BaseURL: "http://127.0.0.1:1/v1", IdleTimeout: -time.Second})
	if err == nil || err.Error() != "openai: IdleTimeout is -1s: want a positive duration, or 0 for 1m0s" {
		t.Errorf("openai: %v", err)
	}
	_, err = NewAnthropic(AnthropicConfig{Model: "x", APIKey: testKey, IdleTimeout: -time.Second})
	if err == nil || err.Error() != "anthropic: IdleTimeout is -1s: want a positive duration, or 0 for 1m0s" {
		t.Errorf("anthropic: %v", err)
	}
}
