package streams_test

import (
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/streams"
)

// The wire form of an item: base64 of the serialized Payload, which keeps
// the payload's encoding for the subscriber's converter.
func ExampleEncodePayload() {
	p, _ := converter.GetDefaultDataConverter().ToPayload("a")
	data, _ := streams.EncodePayload(p)
	fmt.Println(data)
	back, _ := streams.DecodePayload(data)
	fmt.Printf("%s %s\n", back.GetMetadata()["encoding"], back.GetData())
	// Output:
	// ChYKCGVuY29kaW5nEgpqc29uL3BsYWluEgMiYSI=
	// json/plain "a"
}

// A workflow reads back its stream by topic or from an offset; offsets count every topic.
func ExampleHost_Items() {
	wf := func(ctx workflow.Context) ([]string, error) {
		host, err := streams.NewHost(ctx, nil, streams.HostConfig{})
		if err != nil {
			return nil, err
		}
		for _, it := range [][2]string{{"status", "thinking"}, {"tokens", "Hel"}, {"tokens", "lo"}, {"status", "done"}} {
			if err := host.Publish(it[0], it[1]); err != nil {
				return nil, err
			}
		}
		var lines []string
		show := func(it streams.Item) {
			var s string
			_ = it.Decode(&s)
			lines = append(lines, fmt.Sprintf("%d %s %s", it.Offset, it.Topic, s))
		}
		for it := range host.Items(0, "tokens") {
			show(it)
		}
		for it := range host.Items(2, "") {
			show(it)
		}
		return lines, nil
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(wf)
	var lines []string
	if err := env.GetWorkflowResult(&lines); err != nil {
		fmt.Println(err)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 1 tokens Hel
	// 2 tokens lo
	// 2 tokens lo
	// 3 status done
}
