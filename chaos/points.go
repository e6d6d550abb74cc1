package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// Point is a kill point.
type Point struct {
	// N is the point's number in the campaign's list (package doc).
	N int
	// Name is its short name in the table.
	Name string
	// Where says where the crash lands.
	Where string
	// Uncertain is true where a write's effect really is uncertain after
	// the crash, so Indeterminate is justified: points 3 and 4.
	Uncertain bool
}

var (
	pointModel       = Point{1, "model", "SIGKILL inside a model call", false}
	pointRead        = Point{2, "read", "SIGKILL inside lookup", false}
	pointWriteBefore = Point{3, "write-before", "SIGKILL inside create_ticket, before its effect", true}
	pointWriteAfter  = Point{4, "write-after", "SIGKILL inside create_ticket, after its effect", true}
	pointBetween     = Point{5, "between", "SIGKILL between steps", false}
	pointPostgres    = Point{6, "postgres", "PostgreSQL restarted inside lookup", false}
	pointDevServer   = Point{7, "devserver", "dev server stopped inside lookup, restarted on its file", false}

	// The freeze and partition points: the worker holding the step is
	// frozen (SIGSTOP) or cut off for faultFor, past the heartbeat
	// timeout, while the rest of the fleet carries on; then it is resumed
	// (SIGCONT) or healed and goes on where it was.
	pointFreezeWriteBefore = Point{8, "freeze-write-before", "SIGSTOP inside create_ticket before its effect, SIGCONT after the heartbeat timeout", true}
	pointFreezeWriteAfter  = Point{9, "freeze-write-after", "SIGSTOP inside create_ticket after its effect, SIGCONT after the heartbeat timeout", true}
	pointFreezeModel       = Point{10, "freeze-model", "SIGSTOP inside a model call, SIGCONT after the heartbeat timeout", false}
	pointCutTemporal       = Point{11, "cut-temporal", "worker cut off from the Temporal frontend inside create_ticket before its effect, healed after the heartbeat timeout", true}
	pointCutPostgres       = Point{12, "cut-postgres", "worker cut off from PostgreSQL inside create_ticket before its effect, healed after the heartbeat timeout", true}

	// pointFollow is the local engine's following driver (starter --local
	// --follow) SIGKILLed while it waits on an approval; a new one resumes
	// the run and goes on by itself when approved from another process.
	pointFollow = Point{13, "follow", "SIGKILL of a following driver waiting on an approval; a new --follow goes on when approved", false}
)

// fault reports whether p is a freeze or partition point.
func (p Point) fault() bool { return p.N >= pointFreezeWriteBefore.N && p.N <= pointCutPostgres.N }

// Settle modes of create_ticket at the freeze and partition points, as
// its tools file declares them (agent.Settle): no idempotency key and no
// probe (the run is parked Indeterminate and the campaign settles it from
// the ticket file, as a person would), a probe only (find_ticket by
// title), a key only (request_id, which the demo store honours).
const (
	settleNone  = "none"
	settleProbe = "probe"
	settleKey   = "key"
)

var settleModes = []string{settleNone, settleProbe, settleKey}

var settleLabels = map[string]string{settleNone: "no key, no probe", settleProbe: "probe only", settleKey: "key only"}

// writeTimeout is create_ticket's timeout in every trial's tools file: a
// later attempt of a write may not act before an earlier attempt's
// deadline (its start plus this) has passed, so the default (2 min) would
// make every write trial wait minutes.
const writeTimeout = 12 * time.Second

// toolsFile is the tools file of a trial in settle mode ("" at the kill
// points: no key, no probe, as the demo's defaults).
func toolsFile(mode string) []byte {
	o := map[string]any{"timeout": writeTimeout.String()}
	switch mode {
	case settleProbe:
		o["probe"] = testenv.ProbeByTitle["probe"] // find_ticket by title
	case settleKey:
		o["idempotency_key"] = "request_id"
	}
	b, _ := json.Marshal(map[string]any{"tools": map[string]any{"create_ticket": o}})
	return b
}

// Engines.
const (
	engineTemporal = "temporal"
	engineLocal    = "local"
)

// Cell is a kill point on one engine, in one settle mode of create_ticket
// ("" at the kill points 1-7: no key, no probe).
type Cell struct {
	Engine string
	Point  Point
	Settle string
}

func (c Cell) String() string {
	if c.Settle == "" {
		return c.Engine + "/" + c.Point.Name
	}
	return c.Engine + "/" + c.Point.Name + "/" + c.Settle
}

// allCells are the campaign's kill points, per engine, in order: seven on
// the Temporal fleet, six on the local engine (which has no server and no
// database; the sixth a following driver), then the freeze and partition points on the Temporal fleet,
// each in the three settle modes.
var allCells = func() []Cell {
	out := []Cell{
		{engineTemporal, pointModel, ""}, {engineTemporal, pointRead, ""}, {engineTemporal, pointWriteBefore, ""},
		{engineTemporal, pointWriteAfter, ""}, {engineTemporal, pointBetween, ""}, {engineTemporal, pointPostgres, ""},
		{engineTemporal, pointDevServer, ""},
		{engineLocal, pointModel, ""}, {engineLocal, pointRead, ""}, {engineLocal, pointWriteBefore, ""},
		{engineLocal, pointWriteAfter, ""}, {engineLocal, pointBetween, ""}, {engineLocal, pointFollow, ""},
	}
	for _, p := range []Point{pointFreezeWriteBefore, pointFreezeWriteAfter, pointFreezeModel, pointCutTemporal, pointCutPostgres} {
		for _, m := range settleModes {
			out = append(out, Cell{engineTemporal, p, m})
		}
	}
	return out
}()

// holdDelay is how long the target model call (its turn's delay in the
// script) or a lookup (AGENTRUN_DEMO_DELAY) takes at the model, read,
// postgres and devserver points (and locally at point between, the model
// call after the target): well above the time the campaign takes to see the step start
// (polls every 20 ms) on a loaded machine, so the kill lands inside the
// step.
const holdDelay = "2s"

// pgDown is how long PostgreSQL stays down at the postgres point; devDown
// how long the dev server does at the devserver point.
const (
	pgDown  = "3s"
	devDown = "2s"
)

// Scenario is a scripted run the campaign crashes.
type Scenario struct {
	Name   string
	Script llm.Script
}

//go:embed long.json
var longScript []byte

// scenarios: the hand example (lookup, create_ticket, answer) and a longer
// run of eight model turns with four lookups and three create_ticket calls
// with distinct titles, each gated on approval.
var scenarios = func() []Scenario {
	long, err := llm.ParseScript(longScript)
	if err != nil {
		panic("chaos/long.json: " + err.Error())
	}
	return []Scenario{{"hand", llm.HandExample()}, {"long", long}}
}()

// steps returns the script's steps of a tool (by name), or its model steps
// for "": llm/1..llm/T.
func (s Scenario) steps(tool string) []string {
	var out []string
	for i, t := range s.Script.Turns {
		if tool == "" {
			out = append(out, fmt.Sprintf("llm/%d", i+1))
			continue
		}
		for j, c := range t.ToolCalls {
			if c.Name == tool {
				out = append(out, fmt.Sprintf("tool/%d/%d/%s", i+1, j, c.Name))
			}
		}
	}
	return out
}

// before returns the step that completes right before step: the tool call
// of the previous turn before a model step (run.started, "", before llm/1),
// the model step of its turn before a tool step. The scripts have one tool
// call per turn.
func (s Scenario) before(step string) string {
	var n, i int
	var name string
	if _, err := fmt.Sscanf(step, "llm/%d", &n); err == nil {
		if n == 1 {
			return ""
		}
		c := s.Script.Turns[n-2].ToolCalls[0]
		return fmt.Sprintf("tool/%d/0/%s", n-1, c.Name)
	}
	if _, err := fmt.Sscanf(step, "tool/%d/%d/%s", &n, &i, &name); err == nil {
		return fmt.Sprintf("llm/%d", n)
	}
	return ""
}

// title returns the title argument of a create_ticket step, "" if step is
// not one of the script's.
func (s Scenario) title(step string) string {
	var n, i int
	var name string
	if _, err := fmt.Sscanf(step, "tool/%d/%d/%s", &n, &i, &name); err != nil || n < 1 || n > len(s.Script.Turns) || i >= len(s.Script.Turns[n-1].ToolCalls) {
		return ""
	}
	var args struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(s.Script.Turns[n-1].ToolCalls[i].Args, &args)
	return args.Title
}

// tickets returns the titles of the tickets a completed run has filed, in
// order.
func (s Scenario) tickets() []string {
	var out []string
	for _, step := range s.steps("create_ticket") {
		out = append(out, s.title(step))
	}
	return out
}

// parseCells parses a comma-separated list of kill points: ENGINE/POINT
// or ENGINE/POINT/SETTLE, or POINT or POINT/SETTLE on either engine; a
// point named without a settle mode stands for all of its modes.
func parseCells(list string) ([]Cell, error) {
	var out []Cell
	var valid []string
	for _, c := range allCells {
		valid = append(valid, c.String())
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		n := len(out)
		for _, c := range allCells {
			full, noEngine := c.String(), strings.TrimPrefix(c.String(), c.Engine+"/")
			if (name == full || name == noEngine || name == c.Engine+"/"+c.Point.Name || name == c.Point.Name) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("unknown kill point %q; valid: %s", name, strings.Join(valid, ", "))
		}
	}
	return out, nil
}
