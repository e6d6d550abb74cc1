package execute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
)

// TailLimit is the most bytes of messages a conversation keeps inline
// (encoded); past it a model step puts them in a node.
const TailLimit = 512

// node is one link of a conversation's chain in the store.
type node struct {
	Prev     string          `json:"prev,omitempty"`
	Stored   int             `json:"stored"` // messages before this node's
	Messages []agent.Message `json:"messages"`
}

// Messages returns the messages of a conversation with every value inline.
// step names the step that needs them, for errors. The slice, and the tool
// calls and arguments in it, are the caller's.
func (e *Executor) Messages(ctx context.Context, step string, c agent.Conversation) ([]agent.Message, error) {
	msgs, err := e.messages(ctx, step, c)
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		if len(msgs[i].ToolCalls) > 0 {
			calls := slices.Clone(msgs[i].ToolCalls)
			for j := range calls {
				calls[j].Args = bytes.Clone(calls[j].Args)
			}
			msgs[i].ToolCalls = calls
		}
	}
	return msgs, nil
}

// messages is Messages for the executor's own use: the slice is new, but
// the tool calls in it are shared with the cache and with c, never to be
// modified.
func (e *Executor) messages(ctx context.Context, step string, c agent.Conversation) ([]agent.Message, error) {
	stored, err := e.chain(ctx, step, c.Head)
	if err != nil {
		return nil, err
	}
	if len(stored) != c.Stored {
		return nil, &ContentError{Step: step, Key: c.Head, Err: fmt.Errorf("%w: the chain holds %d messages, the reference says %d", content.ErrDamaged, len(stored), c.Stored)}
	}
	tail, err := e.Resolve(ctx, step, c.Tail)
	if err != nil {
		return nil, err
	}
	return slices.Concat(stored, tail), nil
}

// chain returns the messages through node head, resolved, from the cache
// when it has them; otherwise it reads the nodes back to the newest one it
// has. The slice is shared: callers must not modify it.
func (e *Executor) chain(ctx context.Context, step, head string) ([]agent.Message, error) {
	if head == "" {
		return nil, nil
	}
	c := e.caches()
	if msgs, ok := c.heads.get(head); ok {
		return msgs, nil
	}
	var nodes []node // newest first
	var base []agent.Message
	for key := head; key != ""; {
		if msgs, ok := c.heads.get(key); ok {
			base = msgs
			break
		}
		b, err := e.get(ctx, step, key)
		if err != nil {
			return nil, err
		}
		var n node
		if err := json.Unmarshal(b, &n); err != nil {
			return nil, &ContentError{Step: step, Key: key, Err: fmt.Errorf("%w: not a conversation node: %v", content.ErrDamaged, err)}
		}
		nodes = append(nodes, n)
		key = n.Prev
	}
	msgs := slices.Clone(base)
	for _, n := range slices.Backward(nodes) {
		if n.Stored != len(msgs) {
			return nil, &ContentError{Step: step, Key: head, Err: fmt.Errorf("%w: a node says %d messages precede it, the chain holds %d", content.ErrDamaged, n.Stored, len(msgs))}
		}
		res, err := e.Resolve(ctx, step, n.Messages)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, res...)
	}
	msgs = slices.Clip(msgs)
	c.heads.put(head, msgs, conversationCost(msgs))
	return msgs, nil
}

// extend appends added (recorded form) to a conversation, putting the
// inline tail in a new node when it outgrows TailLimit. all is the whole
// conversation after it, resolved, which the cache keeps for the next step.
func (e *Executor) extend(ctx context.Context, c agent.Conversation, added, all []agent.Message) (agent.Conversation, error) {
	tail := slices.Concat(c.Tail, added)
	b, err := json.Marshal(tail)
	if err != nil {
		return c, err
	}
	if len(b) <= TailLimit {
		return agent.Conversation{Head: c.Head, Stored: c.Stored, Tail: tail}, nil
	}
	b, err = json.Marshal(node{Prev: c.Head, Stored: c.Stored, Messages: tail})
	if err != nil {
		return c, err
	}
	key, err := e.put(ctx, b)
	if err != nil {
		return c, err
	}
	e.caches().heads.put(key, slices.Clip(all), conversationCost(all))
	// The conversation it grew from is what this run needed before; the
	// next step needs the new one. (A retry of this step reads it back.)
	if c.Head != "" {
		e.caches().heads.remove(c.Head)
	}
	return agent.Conversation{Head: key, Stored: c.Stored + len(tail)}, nil
}

// Resolve returns msgs with every reference replaced by its content.
func (e *Executor) Resolve(ctx context.Context, step string, msgs []agent.Message) ([]agent.Message, error) {
	out := make([]agent.Message, len(msgs))
	for i, m := range msgs {
		if m.ContentRef != nil {
			b, err := e.get(ctx, step, m.ContentRef.Key)
			if err != nil {
				return nil, err
			}
			m.Content, m.ContentRef = string(b), nil
		}
		if len(m.ToolCalls) > 0 {
			calls := slices.Clone(m.ToolCalls)
			for j, tc := range calls {
				if tc.ArgsRef != nil {
					b, err := e.get(ctx, step, tc.ArgsRef.Key)
					if err != nil {
						return nil, err
					}
					calls[j].Args, calls[j].ArgsRef = b, nil
				}
			}
			m.ToolCalls = calls
		}
		out[i] = m
	}
	return out, nil
}

// stash keeps text in the store when it is larger than agent.InlineLimit
// and returns it inline or as a reference.
func (e *Executor) stash(ctx context.Context, text string) (string, *agent.Ref, error) {
	if len(text) <= agent.InlineLimit {
		return text, nil, nil
	}
	ref, err := e.KeepText(ctx, text)
	if err != nil {
		return "", nil, err
	}
	return "", ref, nil
}

// KeepText puts text in the store, whatever its size, and returns its
// reference (a streamed answer the run takes back from its stream: the
// store holds it for when the stream does not).
func (e *Executor) KeepText(ctx context.Context, text string) (*agent.Ref, error) {
	key, err := e.put(ctx, []byte(text))
	if err != nil {
		return nil, err
	}
	return &agent.Ref{Key: key, Size: len(text), Preview: preview(text)}, nil
}

// put stores b and remembers it in the blob cache.
func (e *Executor) put(ctx context.Context, b []byte) (string, error) {
	key, err := e.Content.Put(ctx, b)
	if err != nil {
		return "", err
	}
	e.caches().blobs.put(key, b, len(b))
	return key, nil
}

// get reads a value from the blob cache or the store. Missing or damaged
// content is a *ContentError naming step and key.
func (e *Executor) get(ctx context.Context, step, key string) ([]byte, error) {
	c := e.caches()
	if b, ok := c.blobs.get(key); ok {
		return b, nil
	}
	b, err := e.Content.Get(ctx, key)
	if errors.Is(err, content.ErrNotFound) || errors.Is(err, content.ErrDamaged) || errors.Is(err, content.ErrInvalidKey) {
		return nil, &ContentError{Step: step, Key: key, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("step %s: read %s: %w", step, key, err)
	}
	c.blobs.put(key, b, len(b))
	return b, nil
}

// preview is the start of text on one line, cut at a character boundary:
// at most agent.PreviewLen bytes, control characters (line breaks, tabs)
// made spaces, and an ellipsis when text is longer.
func preview(text string) string {
	n := min(len(text), agent.PreviewLen)
	for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	b := []byte(text[:n])
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			b[i] = ' '
		}
	}
	if n < len(text) {
		return string(b) + "…"
	}
	return string(b)
}

// Value returns the content a reference points at; step names the step
// that needs it, for errors.
func (e *Executor) Value(ctx context.Context, step string, r *agent.Ref) ([]byte, error) {
	return e.get(ctx, step, r.Key)
}
