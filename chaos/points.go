package main

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
	pointModel       = Point{1, "model", "worker SIGKILLed inside a model call", false}
	pointRead        = Point{2, "read", "worker SIGKILLed inside lookup", false}
	pointWriteBefore = Point{3, "write-before", "fleet SIGKILLed inside create_ticket, before its effect", true}
	pointWriteAfter  = Point{4, "write-after", "fleet SIGKILLed inside create_ticket, after its effect", true}
	pointBetween     = Point{5, "between", "worker SIGKILLed between steps (run parked on approval)", false}
	pointPostgres    = Point{6, "postgres", "PostgreSQL restarted inside lookup", false}
)

// allPoints are the campaign's kill points, in order.
var allPoints = []Point{pointModel, pointRead, pointWriteBefore, pointWriteAfter, pointBetween, pointPostgres}

// holdDelay is how long a model call (the script's delay) or a lookup
// (AGENTRUN_DEMO_DELAY) takes at points 1, 2 and 6: well above the time
// the campaign takes to see the step start (polls every 20 ms) on a loaded
// machine, so the kill lands inside the step.
const holdDelay = "2s"

// pgDown is how long PostgreSQL stays down at point 6.
const pgDown = "3s"
