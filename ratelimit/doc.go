// Package ratelimit paces a fleet's model calls under a provider account's
// rate limits: requests and tokens per minute, declared with the model's
// settings (the models file's "limits") and shared by every worker, and
// every local run, that reaches the same [Store].
//
// # The rule
//
// A pool (by default the provider: "openai", "anthropic") has one shared
// [State]: when its next request may go, when its next token may go, and
// until when the provider asked everyone to wait. [Limiter.Take] reserves
// a call's slot in one update of the store: the slot is the first instant
// at or after now that is past all three, and reserving it moves the next
// request on by a minute over RequestsPerMinute and the next token by the
// call's estimated tokens times a minute over TokensPerMinute (the
// generic cell rate algorithm, with no burst: calls go evenly spaced, at
// [Headroom] of the limits, so that a call's varying latency to the
// provider never makes two arrive closer than the limits allow). A
// call corrects its estimate once the provider has answered
// ([Limiter.Settle]), and a 429 pauses the whole pool for the provider's
// Retry-After plus up to a tenth more of jitter ([Limiter.Pause]): every
// caller that reaches the store waits, rather than each guessing on its own
// clock.
//
// # Guarantees
//
//   - Callers that share a store never reserve more than the pool's
//     requests in any minute; their tokens exceed TokensPerMinute in a
//     minute by at most the last call's (a call's tokens are known only
//     once it is reserved).
//   - A caller that dies holds little: it reserves its slot only when the
//     slot is at most [Ahead] away, so what it reserved passes within Ahead,
//     and the other callers' slots come at the pool's pace as if it had
//     never been there.
//   - A caller that was frozen (SIGSTOP) past its slot, by more than
//     [MaxLate], takes a new one when it wakes: it never sends a call of an
//     old slot among the newer ones.
//   - A wait is bounded by the caller's horizon, fixed when Take begins: a
//     slot further off is not reserved, and Take returns a *[NoSlotError]
//     saying when one would be.
//   - A caller that waits tells how long ([WithWaits]): the pool's next slot
//     plus half of the other callers waiting unreserved (State.Waiting, each
//     entry renewed at its caller's every look and dropped when it lapses,
//     at most [MaxWaiting] of them), since those go in no set order.
//   - A state is trusted only as far as a Limiter could have set it: no
//     time further ahead than a slot Ahead away plus a minute's hold (a
//     call's tokens hold the pool at most a minute), a pause of [MaxPause]
//     and its jitter, or a look a [MaxHorizon] away, each give or take a
//     minute of clock skew between hosts. A state with a time further
//     ahead (a host whose clock ran ahead, a bad edit: say the year 2999)
//     is damage: the next update starts the pool afresh and logs one
//     warning naming the pool and where it is kept ([Locator]).
//
// The state is not a durable record: a store may lose it (a crash between
// a write and the disk), and the pool then starts afresh, which is at most
// one minute's calls early.
//
// # Stores
//
// [FileStore] keeps each pool's state in a small file under one folder,
// updated under an exclusive flock(2): every process on one host that uses
// the folder shares the pool. The PostgreSQL store (package postgres) does
// the same for a fleet on many hosts, in one row per pool updated in a
// transaction that holds the row's lock, waiting at most 5 s for it
// (lock_timeout) so that a frozen holder does not hold the pool. [MemStore]
// is one process's. Each passes the conformance suite of [Store]
// ([github.com/agentrun/agentrun/ratelimit/storetest]).
package ratelimit
