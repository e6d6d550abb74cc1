package agentrun_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrun/agentrun"
)

type chargeIn struct {
	Order       string `json:"order" jsonschema:"the order to charge"`
	AmountCents int    `json:"amount_cents" jsonschema:"how much, in cents"`
}

// Billing is a team's activities, registered on its own workers
// (w.RegisterActivity(&Billing{})) on the task queue "billing".
type Billing struct{}

func (*Billing) Charge(_ context.Context, in chargeIn) (string, error) {
	return fmt.Sprintf("CH-%s-%d", in.Order, in.AmountCents), nil
}

// A team's registered activity as a tool: a run schedules the call as the
// activity Charge on the queue "billing", at most once (a write). The
// local engine, which has no activities, calls the method itself.
func ExampleActivityTool() {
	b := &Billing{}
	charge, err := agentrun.ActivityTool(agentrun.ToolOptions{Name: "charge", Description: "Charge an order.", Write: true},
		b.Charge, agentrun.ActivityOptions{TaskQueue: "billing", StartToCloseTimeout: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := charge.Spec().Activity
	fmt.Println(a.Name, a.TaskQueue, a.StartToClose)
	res, _ := charge.Call(context.Background(), []byte(`{"order":"A-7","amount_cents":1250}`))
	fmt.Println(res.Content)
	// Output:
	// Charge billing 30s
	// CH-A-7-1250
}

// A run's events as they happen: each step completed and each status.
func ExampleRun_Subscribe() {
	ctx := context.Background()
	var runs *agentrun.Client // agentrun.NewClient(c, agentrun.ClientOptions{})
	run, err := runs.Start(ctx, agentrun.StartOptions{ID: "support-42", Prompt: "Refund order A-7."})
	if err != nil {
		fmt.Println(err)
		return
	}
	for u, err := range run.Subscribe(ctx, agentrun.SubscribeOptions{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if e := u.Event; e != nil {
			fmt.Println(u.Offset, e.Type, e.Step, e.Status)
		}
	}
}
