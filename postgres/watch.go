package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

var _ journal.Watcher = (*Journal)(nil)

// channel is the NOTIFY channel of a journal: "agentrun_journal_local" or
// "agentrun_journal_temporal". Every Append that inserts NOTIFYs it with the
// run id as payload, in the append's own statement.
func channel(name string) string { return "agentrun_journal_" + name }

// ListenRetry is how long a Watch waits before it connects again after its
// listening connection failed. It wakes its reader when the connection
// failed and again once it listens anew: what was appended meanwhile is in
// the reader's next load. So a wake-up is late by at most the time the
// server is unreachable, plus ListenRetry.
const ListenRetry = time.Second

// WatchRun implements journal.Watcher: it LISTENs on the journal's channel
// on a connection of its own, outside the pool (it blocks in
// WaitForNotification), and wakes the reader for each notification with
// runID as payload. PostgreSQL delivers a notification when the append's
// transaction commits, so a wake-up comes within milliseconds of the
// append. WatchRun returns once the connection listens: an append that
// commits after that is seen. A failed connection is opened again every
// ListenRetry until the Watch is closed.
func (j *Journal) WatchRun(ctx context.Context, runID string) (journal.Watch, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	conn, err := j.listen(ctx)
	if err != nil {
		return nil, err
	}
	var cur *pgx.Conn = conn
	return journal.NewWatch(ctx, func(ctx context.Context, wake func()) {
		for {
			if cur == nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(ListenRetry):
				}
				c, err := j.listen(ctx)
				if err != nil {
					continue
				}
				cur = c
				wake() // appends while it did not listen are in the next load
			}
			n, err := cur.WaitForNotification(ctx)
			if err != nil {
				cur.Close(context.Background())
				cur = nil
				if ctx.Err() != nil {
					return
				}
				wake()
				continue
			}
			if n.Payload == runID {
				wake()
			}
		}
	}, func() error {
		if cur != nil {
			return cur.Close(context.Background())
		}
		return nil
	}), nil
}

// listen opens a connection that LISTENs on the journal's channel.
func (j *Journal) listen(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, j.db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel(j.name)}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}
