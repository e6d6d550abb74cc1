package main

import (
	"log/slog"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/internal/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// newAgentWorker returns a worker of AgentRun on queue: the workflow
// registered under its contract name, and its activities with the scripted
// model playing script, the demo tools (tickets in dir) and the write guard's
// journal in a FileStore under dir. close releases the tools once the worker
// has stopped.
//
// This is the one place the bench builds AgentRun's worker, so that changes
// to the workflow and activities APIs are adapted here only.
func newAgentWorker(c client.Client, queue string, script llm.Script, dir string, logger *slog.Logger) (w worker.Worker, close func() error, err error) {
	set, err := tools.NewSet(tools.Demo(tools.DemoConfig{Tickets: filepath.Join(dir, "tickets.jsonl")})...)
	if err != nil {
		return nil, nil, err
	}
	store, err := journal.NewFileStore(filepath.Join(dir, "guard"))
	if err != nil {
		return nil, nil, err
	}
	store.Logger = logger
	w = worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	w.RegisterActivity(&activities.Activities{
		Exec:   &execute.Executor{Model: llm.NewScripted(script), Tools: set},
		Guard:  &journal.Journal{Store: store},
		Logger: logger,
	})
	return w, set.Close, nil
}
