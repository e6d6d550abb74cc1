// Package hand holds the hand example's fixtures that tests of every
// package share: its prompt and its step names. It imports nothing, so
// that any package's internal tests can use it; the fixtures that need
// the programs (tools files, tickets, holds) are testenv's.
//
// The hand example is the scripted model's run (llm.Script's default):
// it asks lookup (LookupStep), then create_ticket (TicketStep), which
// waits for approval, and answers with the ticket.
package hand

const (
	// Prompt is the hand example's prompt.
	Prompt = "I need read access to the orders database."
	// LookupStep is its first tool step, the read-only lookup.
	LookupStep = "tool/1/0/lookup"
	// TicketStep is its write step, the marker an approval names.
	TicketStep = "tool/2/0/create_ticket"
	// TicketTitle is the title of the ticket it files.
	TicketTitle = "Read access to the orders database"
)
