package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
)

// catchUp bounds how long a follower waits, before it prints where the run
// stands, for the model text published so far to be printed.
const catchUp = 2 * time.Second

// liveText prints a run's model text as it arrives (progress.TopicTokens)
// between the lines the follower prints: each step's text after a
// "[llm/N]" label (with the attempt when it is not the first), a child
// run's after its run id too ("[run-7.tool.1.0.filer] [llm/1] "), the
// lines of the follower on lines of their own.
type liveText struct {
	w   io.Writer
	run string // the run followed: only its offsets count

	mu      sync.Mutex
	midLine bool
	last    string // the step and attempt printed last
	offset  int64  // the offset after the last item read
	done    chan struct{}
	stop    context.CancelFunc
}

// followText starts printing runID's model text published from the
// stream's current offset on, and that of the child runs it starts from
// then on (progress.Subscribe follows them); Close stops it. Without a stream (a run
// started before runs had one) it prints nothing. A lost connection to
// Temporal does not end it: it subscribes again from the offset it had
// read, every resubscribeEvery, until the connection is back.
func (r *Remote) followText(ctx context.Context, w io.Writer, runID string) *liveText {
	t := &liveText{w: w, run: runID, done: make(chan struct{})}
	t.offset = r.streamOffset(ctx, runID)
	ctx, t.stop = context.WithCancel(ctx)
	go func() {
		defer close(t.done)
		for {
			t.mu.Lock()
			from := t.offset
			t.mu.Unlock()
			// Events too, though only tokens are printed: the offset read
			// then tells when the text published so far is printed (wait).
			var lost error
			for u, err := range progress.Subscribe(ctx, r.Conn, runID, progress.Options{From: from}) {
				if errors.Is(err, progress.ErrItem) || err != nil && u.Run != runID {
					continue // an item that does not decode, or a child whose text cannot be read: the rest goes on
				}
				if err != nil {
					lost = err
					break
				}
				t.token(u)
			}
			if lost == nil || !transient(lost) {
				return // the run ended, or has no stream to follow (an older run): the follower's lines stand alone
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(resubscribeEvery):
			}
		}
	}()
	return t
}

// resubscribeEvery is how often a follower whose connection to Temporal
// was lost subscribes to the run's model text again.
const resubscribeEvery = time.Second

// streamOffset is the offset the run's next stream item gets, or 0 when
// it cannot be asked (the run's stream is then read from its start).
func (r *Remote) streamOffset(ctx context.Context, runID string) int64 {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := r.Conn.QueryWorkflow(qctx, runID, "", streams.OffsetQuery)
	var n int64
	if err != nil || v.Get(&n) != nil {
		return 0
	}
	return n
}

func (t *liveText) token(u progress.Update) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if u.Run == t.run {
		t.offset = u.Offset + 1 // a child's offsets are of its own stream
	}
	tok := u.Token
	if tok == nil {
		return
	}
	label := tok.Step
	if tok.Attempt > 1 {
		label = fmt.Sprintf("%s, attempt %d", tok.Step, tok.Attempt)
	}
	if tok.Child != "" {
		label = tok.Child + "] [" + label
	}
	label = TermSafe(label)
	if label != t.last {
		if t.midLine {
			fmt.Fprintln(t.w)
		}
		fmt.Fprintf(t.w, "[%s] ", label)
		t.last = label
	}
	fmt.Fprint(t.w, tok.Text)
	t.midLine = !strings.HasSuffix(tok.Text, "\n")
}

// Write prints the follower's own lines, on a line of their own.
func (t *liveText) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.midLine {
		fmt.Fprintln(t.w)
		t.midLine, t.last = false, ""
	}
	return t.w.Write(p)
}

// wait lets the text published before now be printed, for at most catchUp.
func (t *liveText) wait(ctx context.Context, r *Remote, runID string) {
	end := r.streamOffset(ctx, runID)
	deadline := time.Now().Add(catchUp)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		read := t.offset
		t.mu.Unlock()
		if read >= end {
			return
		}
		select {
		case <-t.done:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops printing.
func (t *liveText) Close() {
	t.stop()
	<-t.done
}
