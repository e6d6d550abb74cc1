// Package logtext keeps payload text out of the programs' logs while the
// payload codec is on. Temporal's history and the stores are sealed then
// (docs/privacy.md); a log line that printed a probe's answer, a tool's
// error or a deny reason would leak what the codec hides.
//
// Call sites mark each attribute that may hold such text with Text (a
// model's or a tool's words, a probe answer, a reason, a last error), and
// leave ids, step names, counts and times as they are. Hide wraps a
// handler so that, with the codec on, every Text value becomes its size
// (key.bytes=N) and every error value its type and size (key.type=T
// key.bytes=N, T the Temporal error type of an *temporal.ApplicationError,
// the Go type otherwise), whoever logs it: agentrun's own code or the
// Temporal sdk (its "Activity error." lines carry the error a tool
// returned). The sdk's text-bearing string attributes (PanicError, Result)
// are treated as Text. With the codec off, For returns the logger as it
// is: every value prints whole.
package logtext
