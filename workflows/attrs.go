package workflows

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"
)

// Search attribute values. The server measures a Keyword value by its
// payload: the value's JSON encoding, as the sdk's converter writes it
// (quotes; \" and \\; \u003c for <, > and &; \u00XX for control
// characters; \ufffd for each byte of invalid UTF-8). A value over
// frontend.searchAttributesSizeOfValueLimit (2 KiB by default), or an
// upsert that takes the run's attributes over
// frontend.searchAttributesTotalSizeLimit (40 KiB), gets the run
// terminated. A value's source does not matter here: a step name, a child
// run's report, a tool name or a marker are all cut by upsertAttrs.

// MaxAttrValue bounds each search attribute value the run upserts: the
// bytes of its JSON encoding, quotes included. A longer value is cut at a
// UTF-8 boundary and ends in "…+N bytes", N the bytes of the value cut off.
const MaxAttrValue = 2000

// MaxAttrTotal bounds the values of one upsert together (their JSON
// encodings), leaving most of the server's 40 KiB for the attributes a
// client sets at start and the sdk's own (TemporalChangeVersion).
const MaxAttrTotal = 4096

// versionFewerActions guards three changes that spare a run billable
// actions on Temporal Cloud (docs/compatibility.md). Version 1: an upsert
// whose AgentRunStatus and AgentRunStep are what the run has already (set
// at its start by the client, inherited across continue-as-new, or
// upserted before) is skipped (upsertAttrs); a first execution whose start
// set an AgentRunForkOf that is not its own corrects it (checkForkAttr);
// and a session keeps one idle timer across its turns (idleWait). The
// default upserted at every change of the state, left the start's
// attributes as they came, and started a timer at each answer. Taken at
// every execution's start (checkAttrs), in the workflow task that records
// the activity names' version marker: Temporal Cloud bills the markers of
// one task as one action, so the version itself costs none.
const versionFewerActions = "fewer-actions"

// upsertAttrs upserts AgentRunStatus and AgentRunStep (nil: unset), each
// value bounded by boundAttrs, unless skipSame and the run has them
// already. It is the only place a run upserts them.
func upsertAttrs(ctx workflow.Context, status string, step *string, skipSame bool) error {
	vals := []string{status}
	if step != nil {
		vals = append(vals, *step)
	}
	vals = boundAttrs(vals, MaxAttrValue, MaxAttrTotal)
	if skipSame && hasAttrs(ctx, vals) {
		return nil
	}
	stepUpdate := StepKey.ValueUnset()
	if step != nil {
		stepUpdate = StepKey.ValueSet(vals[1])
	}
	return workflow.UpsertTypedSearchAttributes(ctx, StatusKey.ValueSet(vals[0]), stepUpdate)
}

// hasAttrs reports whether the run's search attributes hold vals: the
// status, and the step (unset when vals holds no step).
func hasAttrs(ctx workflow.Context, vals []string) bool {
	sa := workflow.GetTypedSearchAttributes(ctx)
	if status, ok := sa.GetKeyword(StatusKey); !ok || status != vals[0] {
		return false
	}
	step, ok := sa.GetKeyword(StepKey)
	if len(vals) == 1 {
		return !ok
	}
	return ok && step == vals[1]
}

// checkForkAttr makes the run's AgentRunForkOf its own at its start: the
// origin its input names for a fork, unset for a run that is none. A
// client sets it at the start, so a start could name any run: one that
// names another is corrected, one that is missing is left missing (the
// namespace may lack the attribute).
func checkForkAttr(ctx workflow.Context, origin string) error {
	have, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(ForkOfKey)
	switch {
	case !ok || have == origin:
		return nil
	case origin == "":
		return workflow.UpsertTypedSearchAttributes(ctx, ForkOfKey.ValueUnset())
	}
	return workflow.UpsertTypedSearchAttributes(ctx, ForkOfKey.ValueSet(origin))
}

// boundAttrs cuts vals so that each one's JSON encoding is at most each
// bytes and all of them together at most total: the shorter values keep
// what they have, the longer ones share what is left equally.
func boundAttrs(vals []string, each, total int) []string {
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return jsonLen(vals[a]) - jsonLen(vals[b]) })
	out := make([]string, len(vals))
	left := total
	for k, i := range order {
		out[i] = boundAttr(vals[i], min(each, left/(len(order)-k)))
		left -= jsonLen(out[i])
	}
	return out
}

// boundAttr returns v, or when v's JSON encoding is longer than limit
// bytes, the longest start of v (cut at a UTF-8 boundary) that fits with
// "…+N bytes" after it, N the bytes of v left out. A limit too small for
// the mark alone gives "".
func boundAttr(v string, limit int) string {
	if jsonLen(v) <= limit {
		return v
	}
	// The mark's N is at most len(v): room for its digits.
	room := limit - jsonLen(cutMark(len(v)))
	if room < 0 {
		return ""
	}
	i := 0
	for i < len(v) {
		r, size := utf8.DecodeRuneInString(v[i:])
		w := jsonWidth(r, size)
		if w > room {
			break
		}
		room -= w
		i += size
	}
	return v[:i] + cutMark(len(v)-i)
}

// cutMark ends a value cut short by n bytes.
func cutMark(n int) string { return "…+" + strconv.Itoa(n) + " bytes" }

// jsonLen is the length of v's JSON encoding (encoding/json with HTML
// escaping, as the sdk's converter), quotes included.
func jsonLen(v string) int {
	n := 2
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		n += jsonWidth(r, size)
		i += size
	}
	return n
}

// jsonWidth is how many bytes encoding/json writes for the rune r that
// takes size bytes of a string (r is utf8.RuneError of size 1 for a byte
// of invalid UTF-8).
func jsonWidth(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return len(`\ufffd`)
	case r == '"', r == '\\', r == '\n', r == '\r', r == '\t', r == '\b', r == '\f':
		return 2
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return len(`\u0000`)
	}
	return size
}
