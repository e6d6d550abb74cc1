package progress

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeRuns is an opener over scripted runs: each run's items, and, for a
// run in wait, a channel closed before its last item is yielded.
type fakeRuns struct {
	items  map[string][]Update
	fail   map[string]error // a run whose stream cannot be read
	wait   map[string]chan struct{}
	closed map[string]chan struct{} // closed when the run's items end

	mu     sync.Mutex
	opened map[string]int64 // run → from
}

func (f *fakeRuns) open(ctx context.Context, run string, from int64, child bool) iter.Seq2[Update, error] {
	f.mu.Lock()
	f.opened[run] = from
	f.mu.Unlock()
	return func(yield func(Update, error) bool) {
		if c := f.closed[run]; c != nil {
			defer close(c)
		}
		if err := f.fail[run]; err != nil {
			yield(Update{Run: run}, err)
			return
		}
		items := f.items[run]
		for i, u := range items {
			if u.Offset < from {
				continue
			}
			if w := f.wait[run]; w != nil && i == len(items)-1 {
				select {
				case <-w:
				case <-ctx.Done():
					return
				}
			}
			u.Run = run
			if !yield(u, nil) {
				return
			}
		}
	}
}

func ev(off int64, typ, step, child string) Update {
	return Update{Offset: off, Event: &Event{Type: typ, Step: step, Child: child}}
}

func tok(off int64, step, text string) Update {
	return Update{Offset: off, Token: &Token{Step: step, Attempt: 1, Text: text}}
}

// tree is a planner that starts the child C (which starts the grandchild
// G) and the child D, whose stream cannot be read; C's last item comes
// only after the planner's stream ended.
func tree() *fakeRuns {
	topDone := make(chan struct{})
	return &fakeRuns{
		items: map[string][]Update{
			"p": {ev(0, EventStepStarted, "llm/1", ""), tok(1, "llm/1", "let me ask"),
				ev(2, EventStepStarted, "tool/1/0/filer", "C"), ev(3, EventStepStarted, "tool/1/1/other", "D"),
				ev(4, EventStepCompleted, "tool/1/0/filer", ""), ev(5, EventStatus, "", "")},
			"C": {ev(0, EventStepStarted, "llm/1", ""), tok(1, "llm/1", "filed "), tok(2, "llm/1", "T-1"),
				ev(3, EventStepStarted, "tool/1/0/sub", "G"), ev(4, EventStatus, "", "")},
			"G": {tok(0, "llm/1", "deep")},
		},
		fail:   map[string]error{"D": errors.New("no stream")},
		wait:   map[string]chan struct{}{"C": topDone},
		closed: map[string]chan struct{}{"p": topDone},
		opened: map[string]int64{},
	}
}

// render is the items of each run, in order, as Update.String shows them.
func render(t *testing.T, seq iter.Seq2[Update, error]) (map[string][]string, []error) {
	t.Helper()
	got := map[string][]string{}
	var errs []error
	for u, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got[u.Run] = append(got[u.Run], u.String())
	}
	return got, errs
}

// TestFollowTree: the children's items are merged, marked with their run
// ids (the grandchild's with its own), the planner's not; the child that
// cannot be read is one error naming it; the subscription waits for the
// child that ends after the planner; children are read from 0 whatever
// the planner's From.
func TestFollowTree(t *testing.T) {
	t.Parallel()
	f := tree()
	got, errs := render(t, follow(t.Context(), f.open, "p", Options{From: 1}))
	want := map[string][]string{
		"p": {"1 token llm/1#1 let me ask", "2 step.started tool/1/0/filer", "3 step.started tool/1/1/other",
			"4 step.completed tool/1/0/filer", "5 status "},
		"C": {"[C] 0 step.started llm/1", "[C] 1 token llm/1#1 filed ", "[C] 2 token llm/1#1 T-1",
			"[C] 3 step.started tool/1/0/sub", "[C] 4 status "},
		"G": {"[G] 0 token llm/1#1 deep"},
	}
	for run, w := range want {
		if !slices.Equal(got[run], w) {
			t.Errorf("run %s: %q, want %q", run, got[run], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("runs yielded: %v", got)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "child run D: no stream") {
		t.Errorf("errors %v, want the one of child D", errs)
	}
	if f.opened["p"] != 1 || f.opened["C"] != 0 || f.opened["G"] != 0 {
		t.Errorf("opened from %v", f.opened)
	}
}

// TestFollowMarks: a relayed item carries Child and Run; the planner's
// step.started keeps naming the child it starts, with Run the planner.
func TestFollowMarks(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	var started *Update
	for u, err := range follow(t.Context(), tree().open, "p", Options{}) {
		if err != nil {
			continue
		}
		if u.Token != nil && u.Token.Child == "C" && u.Run == "C" {
			text.WriteString(u.Token.Text)
		}
		if u.Event != nil && u.Event.Step == "tool/1/0/filer" && u.Event.Type == EventStepStarted {
			started = &u
		}
		if u.Run == "p" && (u.Token != nil && u.Token.Child != "" || u.Event != nil && u.Event.Child != "" && u.Event.Type != EventStepStarted) {
			t.Errorf("a planner's item marked: %v", u)
		}
	}
	if text.String() != "filed T-1" {
		t.Errorf("child's text %q", text.String())
	}
	if started == nil || started.Run != "p" || started.Event.Child != "C" || started.child() != "" {
		t.Errorf("planner's step.started: %+v", started)
	}
}

// TestFollowRunOnly: RunOnly yields the planner's items alone and opens no
// child.
func TestFollowRunOnly(t *testing.T) {
	t.Parallel()
	f := tree()
	got, errs := render(t, follow(t.Context(), f.open, "p", Options{RunOnly: true}))
	if len(got) != 1 || len(got["p"]) != 6 || len(errs) != 0 || len(f.opened) != 1 {
		t.Errorf("RunOnly: %v %v, opened %v", got, errs, f.opened)
	}
}

// TestFollowTokensOnly: with Topics tokens alone, the children are still
// followed (their events read) but no event is yielded.
func TestFollowTokensOnly(t *testing.T) {
	t.Parallel()
	got, _ := render(t, follow(t.Context(), tree().open, "p", Options{Topics: []string{TopicTokens}}))
	all := slices.Concat(got["p"], got["C"], got["G"])
	if len(all) != 4 || len(got["G"]) != 1 {
		t.Errorf("tokens only: %v", got)
	}
	for _, s := range all {
		if !strings.Contains(s, " token ") {
			t.Errorf("not a token: %s", s)
		}
	}
}

// TestFollowBreak: a caller that stops early ends every follower (the
// range returns; C's follower waits on a planner that never closes it).
func TestFollowBreak(t *testing.T) {
	t.Parallel()
	f := tree()
	f.closed = nil // C waits for ever
	n := 0
	for u, err := range follow(t.Context(), f.open, "p", Options{}) {
		if err == nil && u.Run == "C" {
			n++
		}
		if n == 4 {
			break
		}
	}
	if n != 4 {
		t.Fatalf("C's items before the break: %d", n)
	}
}
