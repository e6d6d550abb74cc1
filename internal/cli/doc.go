// Package cli holds what the starter and reconcile programs do, so that
// their mains stay thin: parse arguments, run against the local journal or
// a Temporal cluster, print for people, and map outcomes to exit codes.
//
// Exit codes: 0 Completed (or an operator command that succeeded), 1 an
// error or a Failed run, 2 a usage error, 3 AwaitingApproval, 4
// Indeterminate, 5 BudgetExceeded.
package cli
