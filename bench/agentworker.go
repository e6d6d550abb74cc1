package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
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
// agentOptions are what differ between the bench's AgentRun workers
// beyond their script and tools: the zero value is a plain worker.
type agentOptions struct {
	// tracer, when not nil, records the activities' spans (tracing on;
	// the client then carries the tracing interceptors too).
	tracer trace.Tracer
	// model, when not nil, wraps the scripted model (the token latency
	// section times its pieces).
	model func(llm.Provider) llm.Provider
	// agents, when set, are agent tools offered besides the demo tools
	// (tools.Open builds the set; extra tools are then refused): a call
	// of one runs a child AgentRun workflow on the same worker, with the
	// worker's model (an agent that names no model).
	agents map[string]tools.Agent
}

// This is the one place the bench builds AgentRun's worker, so that changes
// to the workflow and activities APIs are adapted here only.
func newAgentWorker(c client.Client, queue string, script llm.Script, dir string, store content.Store, logger *slog.Logger, opts agentOptions, extra ...tools.Tool) (w worker.Worker, close func() error, err error) {
	demo := tools.DemoConfig{Tickets: filepath.Join(dir, "tickets.jsonl")}
	var set *tools.Set
	if len(opts.agents) > 0 {
		if len(extra) > 0 {
			return nil, nil, fmt.Errorf("bench worker: agent tools and extra tools together are not supported; want one or the other")
		}
		set, err = tools.Open(context.Background(), tools.Config{Agents: opts.agents}, demo)
	} else {
		set, err = tools.NewSet(append(tools.Demo(demo), extra...)...)
	}
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
	var model llm.Provider = llm.NewScripted(script)
	if opts.model != nil {
		model = opts.model(model)
	}
	w = worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	activities.Register(w, &activities.Activities{
		Exec:   &execute.Executor{Model: model, Tools: set, Content: store},
		Guard:  &journal.Guard{Store: guard},
		Logger: logger,
		Tracer: opts.tracer,
	}, false)

	return w, set.Close, nil
}

// readNotes is the read tool of the runs with large outputs (encryption,
// tracing, the long run): ToolOutput bytes of
// English-like words, different for every line, so that compression does
// what it does to real text rather than to a repeated byte.
type readNotes struct{ size int }

var noteWords = strings.Fields("the ticket customer reported that our vpn client fails after the update " +
	"on windows laptops while the office network works and support asked for logs from monday " +
	"because the gateway certificate rotated at night and several users lost access to mail")

func (readNotes) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "read_notes", Description: "Reads support notes from a line.", Kind: agent.KindRead,
		Schema: json.RawMessage(`{"type":"object","properties":{"line":{"type":"integer"}}}`)}
}

func (r readNotes) Call(_ context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var a struct{ Line int }
	if err := json.Unmarshal(args, &a); err != nil {
		return agent.ToolResult{}, err
	}
	rng := rand.New(rand.NewPCG(uint64(a.Line), 1))
	var b strings.Builder
	fmt.Fprintf(&b, "notes from line %d:", a.Line)
	for b.Len() < r.size {
		b.WriteString(" " + noteWords[rng.IntN(len(noteWords))])
	}
	return agent.ToolResult{Content: b.String()[:r.size]}, nil
}

// startAgentWorker is newAgentWorker, started; stop stops the worker, then
// closes its tools.
func startAgentWorker(c client.Client, queue string, script llm.Script, dir string, store content.Store, logger *slog.Logger, opts agentOptions, extra ...tools.Tool) (stop func(), err error) {
	w, closeTools, err := newAgentWorker(c, queue, script, dir, store, logger, opts, extra...)
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		_ = closeTools()
		return nil, err
	}
	return func() { w.Stop(); _ = closeTools() }, nil
}
