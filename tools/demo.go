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

// DemoConfigFromEnv reads AGENTRUN_TICKETS and AGENTRUN_DEMO_DELAY.
func DemoConfigFromEnv() (DemoConfig, error) {
	c := DemoConfig{Tickets: os.Getenv("AGENTRUN_TICKETS")}
	if v := os.Getenv("AGENTRUN_DEMO_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("AGENTRUN_DEMO_DELAY=%q is not a duration: want a Go duration such as 500ms or 2s", v)
		}
		c.Delay = d
	}
	return c.withDefaults(), nil
}

// Demo returns the demo tools: lookup and create_ticket.
func Demo(c DemoConfig) []Tool {
	c = c.withDefaults()
	return []Tool{lookup{delay: c.Delay}, &TicketStore{Path: c.Tickets, Delay: c.Delay}}
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
		Schema:      json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title"]}`),
		Kind:        agent.KindWrite,
	}
}

// Call implements Tool: it writes the ticket, fsyncs, then (after Delay)
// returns its id.
func (s *TicketStore) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Title == "" {
		return agent.ToolResult{IsError: true, Content: `create_ticket wants {"title": "...", "body": "..."}`}, nil
	}
	id, err := s.append(in.Title, in.Body)
	if err != nil {
		return agent.ToolResult{}, err
	}
	if err := sleep(ctx, s.Delay); err != nil {
		return agent.ToolResult{}, err
	}
	return agent.ToolResult{Content: id}, nil
}

func (s *TicketStore) append(title, body string) (string, error) {
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
	n, err := countLines(f)
	if err != nil {
		return "", err
	}
	t := Ticket{ID: fmt.Sprintf("TICKET-%d", n+1), Title: title, Body: body}
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

func countLines(f *os.File) (int, error) {
	if _, err := f.Seek(0, 0); err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			n++
		}
	}
	return n, sc.Err()
}

// ReadTickets returns the tickets in the store at path; a missing file has
// none.
func ReadTickets(path string) ([]Ticket, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ts []Ticket
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t Ticket
		if err := json.Unmarshal(line, &t); err != nil {
			return nil, fmt.Errorf("%s: bad ticket line: %w", path, err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

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
		return ctx.Err()
	}
}
