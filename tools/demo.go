package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// DemoConfig configures the demo tools.
type DemoConfig struct {
	// Tickets is the JSONL ticket store. Default ".agentrun/tickets.jsonl"
	// (AGENTRUN_TICKETS).
	Tickets string
	// Delay makes lookup sleep before it answers and create_ticket sleep
	// after the ticket is written and before it returns, so that crash
	// tests can kill a process inside a step. Default 0
	// (AGENTRUN_DEMO_DELAY).
	Delay time.Duration
}

// DefaultTickets is the default ticket store.
const DefaultTickets = ".agentrun/tickets.jsonl"

func (c DemoConfig) withDefaults() DemoConfig {
	if c.Tickets == "" {
		c.Tickets = DefaultTickets
	}
	return c
}

// Demo returns the demo tools: lookup, create_ticket and find_ticket.
func Demo(c DemoConfig) []Tool {
	c = c.withDefaults()
	store := &TicketStore{Path: c.Tickets, Delay: c.Delay}
	return []Tool{lookup{delay: c.Delay}, store, findTicket{store}}
}

// policyText is the built-in knowledge lookup answers from.
var policyText = map[string]string{
	"database access": "Access policy: read access to production databases needs a ticket approved by the data owner; access expires after 90 days.",
	"vpn":             "VPN policy: every employee may use the VPN; request a certificate from IT.",
	"laptop":          "Hardware policy: laptops are replaced every three years; file a ticket with IT.",
}

type lookup struct{ delay time.Duration }

func (lookup) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "lookup",
		Description: "Look up the company policy on a topic.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","description":"the topic, e.g. database access"}},"required":["topic"]}`),
		Kind:        agent.KindRead,
	}
}

func (l lookup) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var in struct {
		Topic string `json:"topic"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Topic == "" {
		return agent.ToolResult{IsError: true, Content: `lookup wants {"topic": "..."}`}, nil
	}
	if err := sleep(ctx, l.delay); err != nil {
		return agent.ToolResult{}, err
	}
	topic := strings.ToLower(strings.TrimSpace(in.Topic))
	for _, k := range []string{"database access", "vpn", "laptop"} {
		if strings.Contains(topic, k) || strings.Contains(k, topic) {
			return agent.ToolResult{Content: policyText[k]}, nil
		}
	}
	return agent.ToolResult{Content: "No policy found for " + in.Topic + "; known topics: database access, vpn, laptop."}, nil
}

// Ticket is one record of the ticket store.
type Ticket struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
	// RequestID is the caller's idempotency key: the store files at most
	// one ticket per request id.
	RequestID string `json:"request_id,omitempty"`
}

// TicketStore is the create_ticket tool: an append-only JSONL file, shared
// safely by processes through an exclusive file lock.
type TicketStore struct {
	Path  string
	Delay time.Duration
}

// Spec implements Tool.
func (*TicketStore) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "create_ticket",
		Description: "File a ticket with IT. Returns the ticket id.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"},"request_id":{"type":"string","description":"optional idempotency key: a second call with the same request_id files nothing and returns the first ticket's id"}},"required":["title"]}`),
		Kind:        agent.KindWrite,
	}
}

// Call implements Tool: it writes the ticket, fsyncs, then (after Delay)
// returns its id. With a request_id that a ticket already has, it writes
// nothing and returns that ticket's id.
func (s *TicketStore) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var in struct {
		Title     string `json:"title"`
		Body      string `json:"body"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Title == "" {
		return agent.ToolResult{IsError: true, Content: `create_ticket wants {"title": "...", "body": "...", "request_id": "..." (optional)}`}, nil
	}
	id, err := s.append(ctx, Ticket{Title: in.Title, Body: in.Body, RequestID: in.RequestID})
	if err != nil {
		return agent.ToolResult{}, err
	}
	if err := sleep(ctx, s.Delay); err != nil {
		return agent.ToolResult{}, err
	}
	return agent.ToolResult{Content: id}, nil
}

// append files t under the next id and returns it, or returns the id of
// the ticket that already has t's request id. It files nothing once ctx
// may no longer act (Live), checked while it holds the store's lock, right
// before the write: an attempt that froze or was cut off past its deadline
// must not file a ticket that a later attempt may be filing.
func (s *TicketStore) append(ctx context.Context, t Ticket) (string, error) {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return "", fmt.Errorf("ticket store: %w", err)
	}
	f, err := os.OpenFile(s.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", fmt.Errorf("ticket store: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock ticket store: %w", err)
	}
	ts, err := readTickets(f)
	if err != nil {
		return "", fmt.Errorf("ticket store: %w", err)
	}
	if t.RequestID != "" {
		for _, old := range ts {
			if old.RequestID == t.RequestID {
				return old.ID, nil // filed already: the request id deduplicates
			}
		}
	}
	if err := Live(ctx); err != nil {
		return "", fmt.Errorf("create_ticket filed nothing: %w", err)
	}
	t.ID = fmt.Sprintf("TICKET-%d", len(ts)+1)
	line, _ := json.Marshal(t)
	if _, err := f.Seek(0, 2); err != nil {
		return "", err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return "", fmt.Errorf("write ticket: %w", err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("sync ticket store: %w", err)
	}
	return t.ID, nil
}

// readTickets reads the tickets of the open store f from its start.
func readTickets(f *os.File) ([]Ticket, error) {
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	var ts []Ticket
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var t Ticket
		if err := json.Unmarshal(line, &t); err != nil {
			return nil, fmt.Errorf("bad ticket line %d: %w", len(ts)+1, err)
		}
		ts = append(ts, t)
	}
	return ts, sc.Err()
}

// ReadTickets returns the tickets in the store at path, read under a
// shared lock; a missing file has none.
func ReadTickets(path string) ([]Ticket, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil { // no half-written ticket
		return nil, fmt.Errorf("lock ticket store: %w", err)
	}
	ts, err := readTickets(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// findTicket is the find_ticket tool: it looks a ticket up by request id or
// title.
type findTicket struct{ store *TicketStore }

// Spec implements Tool.
func (findTicket) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "find_ticket",
		Description: "Find a ticket by its request_id or its exact title. Returns \"TICKET-N: TITLE\" or \"no ticket ...\".",
		Schema:      json.RawMessage(`{"type":"object","properties":{"request_id":{"type":"string"},"title":{"type":"string"}}}`),
		Kind:        agent.KindRead,
	}
}

// Call implements Tool.
func (f findTicket) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var in struct {
		RequestID string `json:"request_id"`
		Title     string `json:"title"`
	}
	if err := json.Unmarshal(args, &in); err != nil || (in.RequestID == "") == (in.Title == "") {
		return agent.ToolResult{IsError: true, Content: `find_ticket wants {"request_id": "..."} or {"title": "..."}`}, nil
	}
	ts, err := ReadTickets(f.store.Path)
	if err != nil {
		return agent.ToolResult{}, err
	}
	for _, t := range ts {
		if (in.RequestID != "" && t.RequestID == in.RequestID) || (in.Title != "" && t.Title == in.Title) {
			return agent.ToolResult{Content: t.ID + ": " + t.Title}, nil
		}
	}
	if in.RequestID != "" {
		return agent.ToolResult{Content: "no ticket with request_id " + in.RequestID}, nil
	}
	return agent.ToolResult{Content: "no ticket titled " + strconv.Quote(in.Title)}, nil
}

// sleep waits d or until ctx ends, and then returns why it ended
// (context.Cause, as Live does): the same error Set.Call returns when it
// sees the context end before the tool answers, whichever of the two it
// sees first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
