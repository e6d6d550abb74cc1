package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/journal"
)

var _ journal.Locker = (*Journal)(nil)

// driverTag begins the application_name of a connection that holds a run's
// driver lock: "agentrun driver pid PID on HOST".
const driverTag = "agentrun driver pid "

// lockKey is the advisory lock key of a run of a journal: 63 bits of an
// FNV-1a hash, positive so that pg_locks shows it as it is.
func lockKey(name, runID string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("agentrun run lock\x00" + name + "\x00" + runID))
	return int64(h.Sum64() & (1<<63 - 1))
}

// LockRun implements journal.Locker with a session-level advisory lock
// (pg_try_advisory_lock) on a connection of its own, outside the pool (so
// that a small pool_max_conns cannot starve the run's own appends), which
// names the process in its application_name for a second driver to read.
// The server releases the lock when the connection ends, so when the
// process dies; also when the connection is lost while the run is driven,
// after which a second driver may start.
func (j *Journal) LockRun(ctx context.Context, runID string) (func(), error) {
	if err := journal.ValidRunID(runID); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cfg := j.db.pool.Config().ConnConfig.Copy()
	host, _ := os.Hostname()
	cfg.RuntimeParams["application_name"] = driverTag + strconv.Itoa(os.Getpid()) + " on " + host
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lock run %s: %s: %w", runID, j.db.target, err)
	}
	key := lockKey(j.name, runID)
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("lock run %s: %s: %w", runID, j.db.target, err)
	}
	if !got {
		defer conn.Close(context.Background())
		be := &journal.BusyError{RunID: runID}
		var app string
		err := conn.QueryRow(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND (l.classid::int8 << 32) | l.objid::int8 = $1`, key).Scan(&app)
		if err == nil {
			be.PID, be.Host = parseDriver(app)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("lock run %s: %w; and who holds it could not be read: %v", runID, be, err)
		}
		return nil, be
	}
	return func() { conn.Close(context.Background()) }, nil
}

// parseDriver reads the pid and host from a driver's application_name;
// zero values when it is not one.
func parseDriver(app string) (pid int, host string) {
	rest, ok := strings.CutPrefix(app, driverTag)
	if !ok {
		return 0, ""
	}
	p, h, _ := strings.Cut(rest, " on ")
	pid, _ = strconv.Atoi(p)
	return pid, h
}
