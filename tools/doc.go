// Package tools holds the executable tools: a Set that maps names to
// implementations and yields the specs the model sees, and the two demo
// tools, lookup (a read) and create_ticket (a write).
//
// create_ticket appends one JSON line per ticket to a file and fsyncs it
// before it returns, so a ticket that was reported exists; a ticket may also
// exist when its caller died before hearing about it, which is exactly the
// case the journal's write guard turns into Indeterminate.
package tools
