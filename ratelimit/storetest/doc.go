// Package storetest is the conformance suite of ratelimit.Store: every
// backend (MemStore, FileStore, the PostgreSQL store) runs it from its own
// tests:
//
//	func TestMyStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) ratelimit.Store { return newMyStore(t) })
//	}
//
// A backend whose stores are shared by separate values over one backing
// (two FileStores of one folder, two PostgreSQL pools of one database) runs
// [RunShared] instead, so that the concurrent updates go through separate
// stores as they do in a fleet.
//
// The suite checks the contract of Store.Update: a pool never seen reads
// the zero State; what fn leaves is kept, Waiting included, and pools are
// apart; an error of fn keeps the state as it was and is returned; updates
// from many goroutines, through one store or several, lose none; a context
// already done returns its error without calling fn; a state in the year
// 2999 is healed by the next [ratelimit.Limiter.Take] over the store, which
// goes at once and logs one line naming where the store keeps the pool
// ([ratelimit.Locator]). Each backend tests its
// own faults (a damaged file, a frozen lock holder) besides.
package storetest
