package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

var _ journal.Locker = (*Journal)(nil)

// driverTag begins the application_name of a connection that holds a run's
// driver lock: "agentrun driver pid PID on HOST"; followerTag, once the
// driver follows its run (journal.FollowMarker).
const (
	driverTag   = "agentrun driver pid "
	followerTag = "agentrun follower pid "
)

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
// after which a second driver may start: the lock's Held finds that out
// before the driver's next step.
func (j *Journal) LockRun(ctx context.Context, runID string) (journal.Lock, error) {
	if err := operator.ValidRunID(runID); err != nil {
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
		err := conn.QueryRow(ctx, holderSQL, key).Scan(&app)
		if err == nil {
			be.PID, be.Host, be.Follows = parseDriver(app)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("lock run %s: %w; and who holds it could not be read: %v", runID, be, err)
		}
		return nil, be
	}
	return &runLock{conn: conn, key: key}, nil
}

// holderSQL returns the application_name of the session that holds a
// run's advisory lock, no row when none does.
const holderSQL = `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND (l.classid::int8 << 32) | l.objid::int8 = $1`

var _ journal.Holders = (*Journal)(nil)

// Holder implements journal.Holders with one query of pg_locks (through
// the pool): it takes no lock.
func (j *Journal) Holder(ctx context.Context, runID string) (*journal.BusyError, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var app string
	err := j.db.pool.QueryRow(ctx, holderSQL, lockKey(j.name, runID)).Scan(&app)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("who drives run %s: %s: %w", runID, j.db.target, err)
	}
	be := &journal.BusyError{RunID: runID}
	be.PID, be.Host, be.Follows = parseDriver(app)
	return be, nil
}

// heldTimeout bounds Held's one round trip. The query is answered from
// shared memory in well under a millisecond; a server or network that
// cannot answer in this long cannot vouch for the lock either, and
// stopping is safe (the run resumes where it stopped).
const heldTimeout = 15 * time.Second

// runLock is a run's driver lock: a session-level advisory lock held by
// the session of conn, a connection no one else uses.
type runLock struct {
	mu   sync.Mutex // a pgx.Conn serves one caller at a time
	conn *pgx.Conn  // nil once released
	key  int64
}

// heldSQL asks the server whether this session holds the run's advisory
// lock. It asks pg_locks rather than only pinging the connection: a ping
// that succeeds proves that some session answers, while this names the
// fact the driver relies on (the lock, granted, to this backend,
// pg_backend_pid(), in this database), so it stays right behind a pooler
// that hands the connection another backend, or after a
// pg_advisory_unlock_all on the session. A session lock has objsubid 1 and
// its 64-bit key split into classid (high half) and objid (low half).
const heldSQL = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
	AND pid = pg_backend_pid()
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND (classid::int8 << 32) | objid::int8 = $1)`

// Held implements journal.Lock with one query on the lock's own
// connection. Any error of that query means the lock cannot be vouched
// for: pgx does not reconnect a Conn, so a connection the server ended
// (pg_terminate_backend, a restart) or that a network cut broke fails
// here, and its session's lock is gone or about to go.
func (l *runLock) Held(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return errors.New("it was released")
	}
	ctx, cancel := context.WithTimeout(ctx, heldTimeout)
	defer cancel()
	var held bool
	if err := l.conn.QueryRow(ctx, heldSQL, l.key).Scan(&held); err != nil {
		if ctx.Err() != nil { // Run checks its own context first: this is heldTimeout
			return fmt.Errorf("its PostgreSQL connection did not answer within %v: %w", heldTimeout, err)
		}
		return fmt.Errorf("its PostgreSQL connection ended: %w", err)
	}
	if !held {
		return errors.New("its PostgreSQL session no longer holds it")
	}
	return nil
}

// Release implements journal.Lock: closing the connection ends the
// session, and with it the lock.
func (l *runLock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
}

// parseDriver reads the pid and host from a driver's application_name, and
// whether it follows its run; zero values when it is not one.
func parseDriver(app string) (pid int, host string, follows bool) {
	rest, ok := strings.CutPrefix(app, driverTag)
	if !ok {
		if rest, follows = strings.CutPrefix(app, followerTag); !follows {
			return 0, "", false
		}
	}
	p, h, _ := strings.Cut(rest, " on ")
	pid, _ = strconv.Atoi(p)
	return pid, h, follows
}

// MarkFollowing implements journal.FollowMarker: the lock's connection
// names the process "agentrun follower pid PID on HOST".
func (l *runLock) MarkFollowing() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), heldTimeout)
	defer cancel()
	host, _ := os.Hostname()
	_, _ = l.conn.Exec(ctx, "SELECT set_config('application_name', $1, false)", followerTag+strconv.Itoa(os.Getpid())+" on "+host)
}
