package activities

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// published records what a joiner published, and when.
type published struct {
	mu    sync.Mutex
	texts []string
	at    []time.Time
}

func (p *published) add(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.texts = append(p.texts, text)
	p.at = append(p.at, time.Now())
}

func (p *published) get() ([]string, []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.texts), slices.Clone(p.at)
}

// TestJoinerFirstPieceAtOnce: the first piece is published at once, the
// pieces after it within the interval are joined and published one
// interval after the first, and flush publishes the rest at once.
func TestJoinerFirstPieceAtOnce(t *testing.T) {
	t.Parallel()
	var p published
	every := 400 * time.Millisecond
	j := newJoiner(every, joinLimit, p.add)
	began := time.Now()
	j.piece("Here is ")
	if texts, _ := p.get(); !slices.Equal(texts, []string{"Here is "}) {
		t.Fatalf("published %q after the first piece, want it at once", texts)
	}
	j.piece("what I ")
	j.piece("found. ")
	if texts, _ := p.get(); len(texts) != 1 {
		t.Fatalf("published %q, want the pieces after the first to wait for the interval", texts)
	}
	deadline := time.Now().Add(10 * time.Second)
	for texts, _ := p.get(); len(texts) < 2; texts, _ = p.get() {
		if time.Now().After(deadline) {
			t.Fatal("the joined pieces were never published")
		}
		time.Sleep(5 * time.Millisecond)
	}
	texts, at := p.get()
	if !slices.Equal(texts, []string{"Here is ", "what I found. "}) {
		t.Fatalf("published %q, want the first piece, then the next two joined", texts)
	}
	if gap := at[1].Sub(at[0]); gap < every-20*time.Millisecond {
		t.Errorf("the joined pieces went %s after the first, want about the interval %s", gap, every)
	}
	j.piece("The end.")
	j.flush()
	if texts, _ := p.get(); len(texts) != 3 || texts[2] != "The end." {
		t.Errorf("published %q after flush, want the last piece at once", texts)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}

// TestJoinerLimit: joined text that reaches the limit is published at
// once, without waiting for the interval.
func TestJoinerLimit(t *testing.T) {
	t.Parallel()
	var p published
	j := newJoiner(time.Hour, 10, p.add)
	j.piece("first ")
	j.piece("12345")
	j.piece("67890")
	texts, _ := p.get()
	if !slices.Equal(texts, []string{"first ", "1234567890"}) {
		t.Fatalf("published %q, want the first piece, then the 10 bytes at once", texts)
	}
	j.piece(strings.Repeat("x", 3))
	j.flush()
	if texts, _ := p.get(); len(texts) != 3 {
		t.Errorf("published %q, want the rest on flush", texts)
	}
}
