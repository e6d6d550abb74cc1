package main

import (
	"log/slog"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// newAgentWorker returns a worker of AgentRun on queue: the workflow
// registered under its contract name, and its activities with the scripted
// model playing script, the demo tools (tickets in dir) and the write guard's
// journal in a FileStore under dir, the content store in store (nil: a
// FileStore under dir) and extra tools besides the demo ones. close
// releases the tools once the worker has stopped.
//
// This is the one place the bench builds AgentRun's worker, so that changes
// to the workflow and activities APIs are adapted here only.
func newAgentWorker(c client.Client, queue string, script llm.Script, dir string, store content.Store, logger *slog.Logger, extra ...tools.Tool) (w worker.Worker, close func() error, err error) {
	set, err := tools.NewSet(append(tools.Demo(tools.DemoConfig{Tickets: filepath.Join(dir, "tickets.jsonl")}), extra...)...)
	if err != nil {
		return nil, nil, err
	}
	if store == nil {
		if store, err = content.NewFileStore(filepath.Join(dir, "content")); err != nil {
			return nil, nil, err
		}
	}
	guard, err := journal.NewFileStore(filepath.Join(dir, "guard"))
	if err != nil {
		return nil, nil, err
	}
	guard.Logger = logger
	w = worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	w.RegisterActivity(&activities.Activities{
		Exec:   &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: store},
		Guard:  &journal.Journal{Store: guard},
		Logger: logger,
	})
	return w, set.Close, nil
}
