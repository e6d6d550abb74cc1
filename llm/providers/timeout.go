package providers

import (
	"github.com/agentrun/agentrun/llm"

	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// withTimeout returns the context of one request: ctx with the request
// timeout d (llm.DefaultTimeout when d is 0) as its deadline.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, time.Duration) {
	if d <= 0 {
		d = llm.DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	return rctx, cancel, d
}

// errIdle is the cause of a stream's context when the idle timeout cut it.
var errIdle = errors.New("no piece of the streamed answer within the idle timeout")

// watch bounds one request. Every request runs under the request timeout
// (whole); a streamed one also under the idle timeout, which each piece
// of the answer restarts (piece). ctx is the caller's context, rctx the
// request's, which ends at the first bound reached.
type watch struct {
	ctx, rctx context.Context
	whole     time.Duration
	idle      time.Duration // 0: no idle timeout (answered whole, or not shorter than whole)
	streamed  bool
	began     time.Time
	pieces    int
	timer     *time.Timer // the idle timer, when idle > 0
	cancel    context.CancelFunc
}

// requestWatch starts the watch of a request answered whole: one timeout,
// whole (llm.DefaultTimeout when 0).
func requestWatch(ctx context.Context, whole time.Duration) *watch {
	rctx, cancel, whole := withTimeout(ctx, whole)
	return &watch{ctx: ctx, rctx: rctx, whole: whole, began: time.Now(), cancel: cancel}
}

// streamWatch starts the watch of a streamed request: whole bounds the
// whole answer (llm.DefaultTimeout when 0), idle the wait for the first piece
// and between two pieces (llm.DefaultIdleTimeout when 0); an idle timeout
// not shorter than whole adds nothing and is not started.
func streamWatch(ctx context.Context, whole, idle time.Duration) *watch {
	wctx, wcancel, whole := withTimeout(ctx, whole)
	rctx, icancel := context.WithCancelCause(wctx)
	w := &watch{ctx: ctx, rctx: rctx, whole: whole, streamed: true, began: time.Now()}
	if idle = cmp.Or(idle, llm.DefaultIdleTimeout); idle < whole {
		w.idle = idle
		w.timer = time.AfterFunc(idle, func() { icancel(errIdle) })
	}
	w.cancel = func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		icancel(nil)
		wcancel()
	}
	return w
}

// piece says that a piece of the streamed answer arrived: the idle timer
// starts again.
func (w *watch) piece() {
	w.pieces++
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

// answeredWhole says that the rest of the answer comes whole (a server
// that ignored the request to stream): from now on only the request
// timeout bounds it.
func (w *watch) answeredWhole() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.streamed = false
}

// stop releases the watch's timers.
func (w *watch) stop() { w.cancel() }

// cut returns the llm.ClassTimeout error of a request that a timeout of the
// watch ended, and nil when none did. The text says which timeout cut it
// and the setting that sets it.
func (w *watch) cut() *llm.Error {
	switch {
	case w.ctx.Err() != nil:
		return nil
	case errors.Is(context.Cause(w.rctx), errIdle):
		what := "before its first piece"
		if w.pieces > 0 {
			what = fmt.Sprintf("after %s, %v into the answer", plural(w.pieces, "piece"), time.Since(w.began).Round(time.Millisecond))
		}
		return &llm.Error{Class: llm.ClassTimeout, Message: fmt.Sprintf("the idle timeout cut the streamed answer: no piece for %v (AGENTRUN_MODEL_IDLE_TIMEOUT) %s; the request was abandoned", w.idle, what)}
	case !errors.Is(w.rctx.Err(), context.DeadlineExceeded):
		return nil
	case w.streamed:
		return &llm.Error{Class: llm.ClassTimeout, Message: fmt.Sprintf("the whole-answer timeout cut the streamed answer after %s: no whole answer within the request timeout of %v (AGENTRUN_MODEL_TIMEOUT); the request was abandoned", plural(w.pieces, "piece"), w.whole)}
	}
	return &llm.Error{Class: llm.ClassTimeout, Message: fmt.Sprintf("no whole answer within the request timeout of %v (AGENTRUN_MODEL_TIMEOUT); the request was abandoned", w.whole)}
}

// plural is n and word, with an s when n is not 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
