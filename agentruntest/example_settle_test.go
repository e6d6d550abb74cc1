package agentruntest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agentruntest"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

type sendIn struct {
	To string `json:"to"`
}

// ExampleEnv_Done tests what a run does when a write cannot tell whether
// it took effect: the mail server's connection broke after the message
// was sent. The run stops as Indeterminate; the test plays the person who
// checked the outbox and found the message there, and the tool is not
// run again.
func ExampleEnv_Done() {
	var t testing.TB = exampleT{}
	sent := 0
	send, err := agentrun.NewTool(agentrun.ToolOptions{Name: "send", Description: "Send the receipt.", Write: true, Approval: "never"},
		func(context.Context, sendIn) (string, error) {
			sent++
			return "", agentrun.OutcomeUnknown(fmt.Errorf("connection reset after the message was sent"))
		})
	if err != nil {
		t.Fatalf("tool: %v", err)
	}
	model := agentruntest.Model(
		agentruntest.Call("send", sendIn{To: "ada@example.com"}),
		agentruntest.Answer("Sent: "+llm.LastToolResult),
	)
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "mailer", Model: model, Tools: []tools.Tool{send}}}})
	env.Done("tool/1/0/send", "message 42 is in the outbox")

	res, err := env.Run("mailer", "Send Ada her receipt.")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	fmt.Println(res.Answer)
	fmt.Println("sends:", sent, "model calls:", model.Calls())
	// Output:
	// Sent: message 42 is in the outbox
	// sends: 1 model calls: 2
}
