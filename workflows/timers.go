package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// awaitFor is workflow.AwaitWithTimeout with the timer's summary said:
// the Web UI shows a run's timers by their summaries, and the sdk's
// default one ("AwaitWithTimeout") says nothing of what the run waits
// for. A summary is not compared on replay: a timer is matched by its id.
func awaitFor(ctx workflow.Context, d time.Duration, summary string, condition func() bool) (bool, error) {
	return workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: d, TimerOptions: workflow.TimerOptions{Summary: summary}}, condition)
}

// timerFor is workflow.NewTimer with the timer's summary said (awaitFor).
func timerFor(ctx workflow.Context, d time.Duration, summary string) workflow.Future {
	return workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary})
}
