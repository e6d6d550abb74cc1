package streams_test

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/streams"
)

// The test workflow hosts a stream and takes orders by signal.
const (
	// sigPublish publishes a testItem from workflow code.
	sigPublish = "test_publish"
	// sigTruncate truncates the log to an offset.
	sigTruncate = "test_truncate"
	// sigCAN drains and continues as new with the stream's state.
	sigCAN = "test_can"
	// sigFinish drains and returns.
	sigFinish = "test_finish"
	// sigActivity runs publishActivity with a publishOrder.
	sigActivity = "test_activity"
	// queryHost answers a hostView.
	queryHost = "test_host"
)

type testItem struct {
	Topic string
	Value string
}

type hostInput struct {
	State         *streams.State
	MaxStateItems int
	Runs          int // continue-as-new count so far
	// OwnReceiver makes the workflow take in publish signals in a
	// coroutine of its own (HostConfig.OwnReceiver).
	OwnReceiver bool
}

type hostView struct {
	Offset     int64
	Base       int64
	Runs       int
	Rejects    int
	Rejected   []streams.Rejected
	Duplicates int
	Truncate   string // the last truncate error
	Callbacks  int    // OnReject calls
	// Tokens are the items on topic "tokens" from offset 1 on
	// (Host.Items), as "OFFSET VALUE".
	Tokens []string
}

// publishOrder is what publishActivity publishes: each batch, then a flush.
type publishOrder struct {
	Batches [][]testItem
}

// streamWorkflow hosts a stream until sigFinish.
func streamWorkflow(ctx workflow.Context, in hostInput) (hostView, error) {
	view := hostView{Runs: in.Runs}
	host, err := streams.NewHost(ctx, in.State, streams.HostConfig{
		MaxStateItems: in.MaxStateItems,
		OnReject:      func(streams.Rejected) { view.Callbacks++ },
		OwnReceiver:   in.OwnReceiver,
	})
	if err != nil {
		return view, err
	}
	if in.OwnReceiver {
		workflow.Go(ctx, func(ctx workflow.Context) {
			ctx, _ = workflow.NewDisconnectedContext(ctx)
			for {
				_ = workflow.Await(ctx, host.Pending)
				host.Receive()
			}
		})
	}
	snapshot := func() hostView {
		v := view
		v.Offset, v.Base = host.Offset(), host.BaseOffset()
		v.Rejects, v.Rejected, v.Duplicates = host.Rejects(), host.Rejected(), host.Duplicates()
		for it := range host.Items(1, "tokens") {
			var s string
			_ = it.Decode(&s)
			v.Tokens = append(v.Tokens, fmt.Sprintf("%d %s", it.Offset, s))
		}
		return v
	}
	if err := workflow.SetQueryHandler(ctx, queryHost, func() (hostView, error) { return snapshot(), nil }); err != nil {
		return view, err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var finish, can bool
	var activities int
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, sigPublish), func(c workflow.ReceiveChannel, _ bool) {
		var it testItem
		c.Receive(ctx, &it)
		_ = host.Publish(it.Topic, it.Value)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, sigTruncate), func(c workflow.ReceiveChannel, _ bool) {
		var to int64
		c.Receive(ctx, &to)
		if err := host.Truncate(to); err != nil {
			view.Truncate = err.Error()
		}
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, sigCAN), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		can = true
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, sigFinish), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		finish = true
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, sigActivity), func(c workflow.ReceiveChannel, _ bool) {
		var order publishOrder
		c.Receive(ctx, &order)
		activities++
		workflow.Go(ctx, func(ctx workflow.Context) {
			_ = workflow.ExecuteActivity(actx, (*publishActivities).Publish, order).Get(ctx, nil)
			activities--
		})
	})
	for !finish && !can {
		sel.Select(ctx)
	}
	// An activity still publishing would lose its last batch to the
	// closing run.
	if err := workflow.Await(ctx, func() bool { return activities == 0 }); err != nil {
		return view, err
	}
	if err := host.Drain(ctx); err != nil {
		return view, err
	}
	if can {
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return view, err
		}
		state := host.State()
		return view, workflow.NewContinueAsNewError(ctx, streamWorkflow, hostInput{
			State: &state, MaxStateItems: in.MaxStateItems, Runs: in.Runs + 1, OwnReceiver: in.OwnReceiver,
		})
	}
	return snapshot(), nil
}

// publishActivities publishes from an activity with a streams.Publisher.
type publishActivities struct{}

func (*publishActivities) Publish(ctx context.Context, order publishOrder) error {
	p, err := streams.NewActivityPublisher(ctx, streams.PublisherConfig{BatchInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	defer p.Close(context.Background())
	for _, batch := range order.Batches {
		for _, it := range batch {
			if err := p.Publish(it.Topic, it.Value); err != nil {
				return err
			}
		}
		activity.RecordHeartbeat(ctx)
		if err := p.Flush(ctx); err != nil {
			return err
		}
	}
	return p.Close(ctx)
}
