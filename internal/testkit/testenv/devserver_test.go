package testenv

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// chainLength is how many no-op activities the chain runs one after another;
// the first burstSteps are not judged (an idle default server serves about
// ten dispatches from its rate limiter's burst).
const (
	chainLength = 40
	burstSteps  = 10
)

// noop returns the time it ran, in Unix nanoseconds.
func noop(context.Context) (int64, error) { return time.Now().UnixNano(), nil }

// chain runs n no-op activities one after another and returns their times.
func chain(ctx workflow.Context, n int) ([]int64, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	times := make([]int64, n)
	for i := range times {
		if err := workflow.ExecuteActivity(ctx, "noop").Get(ctx, &times[i]); err != nil {
			return nil, err
		}
	}
	return times, nil
}

// TestDevServerDispatchesAtFullSpeed proves that the tests' dev server runs
// with devserver.DynamicConfig: a default dev server spends ~90 ms per
// activity of a sequential chain waiting on its own rate limit (after a
// burst of about ten), a tuned one 5–10 ms.
func TestDevServerDispatchesAtFullSpeed(t *testing.T) {
	if raceEnabled {
		// The race detector slows this process's worker to about the
		// default server's pace: the figure would not tell the two apart.
		// make test runs it without.
		t.Skip("a timing test: it runs without -race (make test)")
	}
	srv := DevServer(t)
	queue := "full-speed-" + time.Now().Format("150405.000000")
	w := worker.New(srv.Client, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(chain, workflow.RegisterOptions{Name: "chain"})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "noop"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, "chain", chainLength)
	if err != nil {
		t.Fatal(err)
	}
	var times []int64
	if err := run.Get(ctx, &times); err != nil {
		t.Fatal(err)
	}
	if len(times) != chainLength {
		t.Fatalf("the chain ran %d activities, want %d", len(times), chainLength)
	}
	var gaps []time.Duration
	for i := burstSteps; i < chainLength; i++ {
		gaps = append(gaps, time.Duration(times[i]-times[i-1]))
	}
	slices.Sort(gaps)
	median := gaps[len(gaps)/2]
	t.Logf("per activity past the first %d: median %v, max %v", burstSteps, median, gaps[len(gaps)-1])
	// The default rate limit spaces dispatches 50 ms apart, two per
	// activity (~90-100 ms); with devserver.DynamicConfig an idle machine
	// takes 5-7 ms, and one whose two cores are busy with other tests up
	// to ~50 ms. The bound lies between the two.
	if median >= 75*time.Millisecond {
		t.Errorf("median time per activity past the first %d is %v, want < 75ms: the dev server runs with its default rate limit (~90ms), not devserver.DynamicConfig", burstSteps, median)
	}
}
