package streams

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The poll update's side of the host: admitting a poll, waiting for items,
// answering up to the response size cap.

// truncated reports whether a poll from in.FromOffset asks for dropped items.
func (h *Host) truncated(in PollInput) bool { return in.FromOffset != 0 && in.FromOffset < h.base }

// ready reports whether a poll can be answered without waiting.
func (h *Host) ready(in PollInput) bool {
	return h.truncated(in) || int64(len(h.log)) > max(in.FromOffset-h.base, 0)
}

func (h *Host) validatePoll(in PollInput) error {
	if in.FromOffset < 0 {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("from_offset %d is negative", in.FromOffset), ErrTypeInvalidPoll, nil)
	}
	if h.draining && !h.ready(in) {
		return temporal.NewNonRetryableApplicationError(
			"the stream is draining for continue-as-new or completion", ErrTypeStreamDraining, nil)
	}
	if h.waiting >= h.cfg.MaxOpenPolls && !h.ready(in) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the stream holds %d polls open already (at most %d, so that the run's own updates get in); poll again later", h.waiting, h.cfg.MaxOpenPolls),
			ErrTypeStreamDraining, nil, BusyDetail)
	}
	return nil
}

// poll answers PollUpdate: it waits until there is an item at or after
// in.FromOffset (or the host drains), then returns the items from there
// that match in.Topics, up to the response size cap.
func (h *Host) poll(ctx workflow.Context, in PollInput) (PollResult, error) {
	h.polling++
	h.served++
	defer func() { h.polling-- }()
	// A cancelled workflow still serves its stream while it winds down:
	// the wait ends on items or Drain, not on cancellation.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	if !h.draining && !h.ready(in) {
		h.waiting++
		err := workflow.Await(ctx, func() bool { return h.draining || h.ready(in) })
		h.waiting--
		if err != nil {
			return PollResult{}, err
		}
	}
	if h.truncated(in) {
		return PollResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("requested offset %d has been truncated; current base offset is %d", in.FromOffset, h.base),
			ErrTypeTruncatedOffset, nil)
	}
	var want map[string]bool
	if len(in.Topics) > 0 {
		want = make(map[string]bool, len(in.Topics))
		for _, t := range in.Topics {
			want[t] = true
		}
	}
	res := PollResult{Items: []WireItem{}, NextOffset: max(h.Offset(), in.FromOffset)}
	size := 0
	for i := max(in.FromOffset-h.base, 0); i < int64(len(h.log)); i++ {
		e := h.log[i]
		if want != nil && !want[e.topic] {
			continue
		}
		n := e.size()
		if size+n > maxPollResponseBytes && len(res.Items) > 0 {
			res.NextOffset = h.base + i
			res.MoreReady = true
			break
		}
		size += n
		res.Items = append(res.Items, WireItem{Topic: e.topic, Data: e.wire(), Offset: h.base + i})
	}
	h.read = max(h.read, res.NextOffset)
	return res, nil
}
