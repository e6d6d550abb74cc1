package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentrun/agentrun/ratelimit"
)

// Limits is a ratelimit.Store in PostgreSQL: one row per pool, its State
// as JSON, updated in a transaction that holds the row's lock.
type Limits struct {
	db *DB
}

var (
	_ ratelimit.Store   = (*Limits)(nil)
	_ ratelimit.Locator = (*Limits)(nil)
)

// Locate implements ratelimit.Locator: the pool's row, e.g. "table
// agentrun_limits, row pool='openai', postgres host:5432 database ...".
func (l *Limits) Locate(pool string) string {
	return fmt.Sprintf("table agentrun_limits, row pool='%s', %s", pool, l.db.target)
}

// Limits returns the rate limits' store: every process on the database
// shares its pools.
func (db *DB) Limits() ratelimit.Store { return &Limits{db: db} }

// Bounds of a limits Update.
const (
	// limitLockTimeout bounds the wait for a pool's row while another
	// transaction holds it (lock_timeout). A holder keeps it for a few
	// round trips; one that is frozen (its process stopped, its network
	// cut) would keep it until the server notices the connection gone, and
	// the others give up after this rather than wait that long.
	limitLockTimeout = 5 * time.Second
	// limitTimeout bounds one Update's whole budget: acquiring a
	// connection, the lock wait and the statements.
	limitTimeout = 30 * time.Second
)

// lockNotAvailable is PostgreSQL's lock_not_available: lock_timeout ran out.
const lockNotAvailable = "55P03"

// Update implements ratelimit.Store in one transaction: it creates the
// pool's row if need be, locks it (SELECT ... FOR UPDATE, waiting at most
// limitLockTimeout), calls fn and writes what fn left, if fn changed it. A
// row whose state is not a State (written by someone else) is replaced:
// the pool starts afresh.
func (l *Limits) Update(ctx context.Context, pool string, fn func(*ratelimit.State) error) error {
	if err := ratelimit.CheckPool(pool); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	opCtx, cancel := context.WithTimeout(ctx, limitTimeout)
	defer cancel()
	var fnErr error
	err := pgx.BeginFunc(opCtx, l.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(opCtx, fmt.Sprintf("SET LOCAL lock_timeout = %d", limitLockTimeout.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(opCtx, `INSERT INTO agentrun_limits (pool, state) VALUES ($1, '{}')
			ON CONFLICT (pool) DO NOTHING`, pool); err != nil {
			return err
		}
		var raw []byte
		if err := tx.QueryRow(opCtx, `SELECT state FROM agentrun_limits WHERE pool = $1 FOR UPDATE`, pool).Scan(&raw); err != nil {
			return err
		}
		var s ratelimit.State
		_ = json.Unmarshal(raw, &s) // a state that is not one starts afresh
		before, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if fnErr = fn(&s); fnErr != nil {
			return fnErr // rolls back
		}
		after, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if bytes.Equal(before, after) {
			return nil
		}
		_, err = tx.Exec(opCtx, `UPDATE agentrun_limits SET state = $2, updated = now() WHERE pool = $1`, pool, after)
		return err
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil && errors.Is(err, fnErr):
		return fnErr
	case ctx.Err() != nil:
		return fmt.Errorf("rate limit %s: %w", pool, ctx.Err())
	case isLockTimeout(err):
		return fmt.Errorf("rate limit %s: another caller held the pool's row for over %v (lock_timeout): %s: %w", pool, limitLockTimeout, l.db.target, err)
	case opCtx.Err() != nil:
		return fmt.Errorf("rate limit %s: %s did not answer within %v: %w", pool, l.db.target, limitTimeout, err)
	}
	return fmt.Errorf("rate limit %s: %s: %w", pool, l.db.target, err)
}

// isLockTimeout reports whether err is lock_timeout's lock_not_available.
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == lockNotAvailable
}
