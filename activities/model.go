package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/plumbing/secret"
	"github.com/agentrun/agentrun/ratelimit"
)

// The model step: one call to the provider, its failures classified for
// Temporal's retries.

// NonRetryableModelErrors are the model error types Temporal must not retry.
var NonRetryableModelErrors = []string{
	string(llm.ClassBadRequest), string(llm.ClassAuth), string(llm.ClassNotFound), string(llm.ClassContextLength),
}

// CallModel runs one model step. Provider failures become application
// errors whose type is the llm error class; rate limits carry the
// provider's Retry-After as the next retry delay.
func (a *Activities) CallModel(ctx context.Context, in StepInput) (json.RawMessage, error) {
	if in.Step.Kind != agent.KindModel || in.Step.Model == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s is not a model step", in.Step.Name), "BadStep", nil)
	}
	a, err := a.forAgent(in.Agent, in.Step.Name)
	if err != nil {
		return nil, err
	}
	if err := a.checkModel(in); err != nil {
		return nil, err
	}
	if err := a.checkBinding(in); err != nil {
		return nil, err
	}
	if a.Metrics != nil && activity.GetInfo(ctx).Attempt == 1 {
		for range denials(in.Step.Model.New) {
			a.Metrics.Decision(ctx, metrics.Deny)
		}
	}
	a.retryStarted(ctx, in.Step.Name)
	ctx = ratelimit.WithWaits(ctx, func(w ratelimit.Wait) { a.limitWaited(ctx, in.Step.Name, w) })
	ctx, span := a.startChat(ctx, in)
	start := time.Now()
	var st streamed // what the run's stream got of the reply's text
	res, err := a.heartbeating(ctx, in.Step.Name, func(ctx context.Context) (json.RawMessage, error) {
		if in.Stream {
			var res json.RawMessage
			var err error
			res, st, err = a.streamModel(ctx, in.Step, in.TextInStream)
			return res, err
		}
		return a.Exec.Execute(ctx, in.Step)
	})
	if err != nil {
		defer func() { a.endChat(span, nil, err) }()
		a.Metrics.Step(ctx, agent.KindModel, metrics.Failed, time.Since(start))
		err = modelError(ctx, err)
		a.retryFailed(ctx, in.Step.Name, err)
		return nil, err
	}
	a.Metrics.Step(ctx, agent.KindModel, metrics.Completed, time.Since(start))
	a.endChat(span, res, nil)
	if a.Metrics != nil { // decoding the reply costs each step some time
		if reply, err := agent.DecodeModelReply(res); err == nil {
			a.Metrics.Tokens(ctx, cmp.Or(reply.Model, a.Exec.Model.Name()), reply.Usage)
		}
	}
	if in.TextInStream && st.whole {
		res = a.answerInStream(ctx, in.Step.Name, res, st.tail)
	}
	return res, nil
}

// denials counts the tool messages among a model step's new messages that
// tell the model a person denied the call: a denial reaches a worker only
// there, with the model step that follows it.
func denials(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == agent.RoleTool && m.IsError && strings.HasPrefix(m.Text(), agent.DeniedByOperator) {
			n++
		}
	}
	return n
}

// contentError is the non-retryable failure of a step whose referenced
// content is missing or damaged, or nil for other errors.
func contentError(ctx context.Context, err error) error {
	var ce *execute.ContentError
	if !errors.As(err, &ce) {
		return nil
	}
	run := activity.GetInfo(ctx).WorkflowExecution.ID
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("run %s, step %s: content %s: %v; nothing is guessed: restore the content store (AGENTRUN_JOURNAL) or start the run again", run, ce.Step, ce.Key, ce.Err),
		ErrTypeContent, nil)
}

func modelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if cerr := contentError(ctx, err); cerr != nil {
		return cerr
	}
	var re *execute.RuleError
	if errors.As(err, &re) {
		return temporal.NewNonRetryableApplicationError(secret.Scrub(re.Error()), ErrTypeRule, nil)
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		e = &llm.Error{Class: llm.ClassNetwork, Message: err.Error()}
	}
	// The provider's words go to the run's history: without the worker's
	// secrets.
	return temporal.NewApplicationErrorWithOptions(secret.Scrub(e.Error()), string(e.Class), temporal.ApplicationErrorOptions{
		NonRetryable:   !e.Class.Retryable(),
		NextRetryDelay: e.RetryAfter,
	})
}
