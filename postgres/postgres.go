package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/journal"
)

// DB is a pool of connections to one PostgreSQL database that holds
// agentrun's journals and content. It is safe for concurrent use.
type DB struct {
	pool   *pgxpool.Pool
	target string // host, port, database and user, for errors: never the password
}

// Bounds of the waits. Each is one operation's whole budget: acquiring a
// connection, sending the statement and reading its answer.
const (
	// defaultConnectTimeout bounds one attempt to connect when the URL
	// sets no connect_timeout: an unreachable host fails in seconds, not
	// after the operating system's TCP timeout (minutes).
	defaultConnectTimeout = 10 * time.Second
	// opTimeout bounds a journal Load, Append or List (journal.Store has no
	// context). An Append cut short by it has an unknown outcome and says
	// so, like any other failed Append.
	opTimeout = time.Minute
)

// Open connects to the database at url (postgres:// or postgresql://; any
// libpq setting of pgx: sslmode, connect_timeout, pool_max_conns, ...),
// creates or migrates agentrun's tables, and returns the DB. Several
// processes may Open one database at once: the migration runs once. Errors
// are one line and never hold the password. Close the DB when done.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: invalid URL: %s", oneLine(redact(err.Error(), url)))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	db := &DB{target: describe(&cfg.ConnConfig.Config)}
	db.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, db.errorf(url, "connect: %w", err)
	}
	if err := db.migrate(ctx); err != nil {
		db.pool.Close()
		return nil, db.errorf(url, "%w", err)
	}
	return db, nil
}

// Close closes the connections.
func (db *DB) Close() { db.pool.Close() }

// Journal returns the store of the local engine's journals (the folder's
// <run id>.jsonl files).
func (db *DB) Journal() journal.Store { return &Journal{db: db, name: localJournal} }

// Guard returns the store of the Temporal write guard's journals (the
// folder's "temporal" subfolder). It is apart from Journal: a run id of
// the local engine and a workflow id of the same name do not meet.
func (db *DB) Guard() journal.Store { return &Journal{db: db, name: guardJournal} }

// SealedJournal is Journal whose records are sealed by sealer (their
// content encrypted, see package journal's doc), when sealer is not nil.
// It reads plain records as well.
func (db *DB) SealedJournal(sealer journal.Sealer) journal.Store {
	return &Journal{db: db, name: localJournal, sealer: sealer}
}

// SealedGuard is Guard whose records are sealed by sealer, when sealer
// is not nil.
func (db *DB) SealedGuard(sealer journal.Sealer) journal.Store {
	return &Journal{db: db, name: guardJournal, sealer: sealer}
}

// Content returns the content store.
func (db *DB) Content() content.Store { return &Content{db: db} }

// SealedContent is Content whose rows hold blobs sealed by sealer
// (encrypted), when sealer is not nil. It reads rows kept plain as well.
func (db *DB) SealedContent(sealer content.Sealer) content.Store {
	return &Content{db: db, sealer: sealer}
}

// String names the database without the password, e.g. "postgres
// 127.0.0.1:5432 database agentrun user agentrun".
func (db *DB) String() string { return db.target }

// describe names a connection's target without its password: host, port,
// database and user.
func describe(c *pgconn.Config) string {
	return fmt.Sprintf("postgres %s database %s user %s", hostPort(c.Host, c.Port), c.Database, c.User)
}

func hostPort(host string, port uint16) string {
	if strings.HasPrefix(host, "/") { // a unix socket directory
		return fmt.Sprintf("%s/.s.PGSQL.%d", host, port)
	}
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// Redact returns the URL with its password, if any, replaced by "xxxxx",
// for logs; a string that does not parse as a URL comes back as
// "postgres URL (unparsable)".
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "postgres URL (unparsable)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// errorf wraps an error with the target; the message is one line and the
// password in url, wherever it shows up, is replaced.
func (db *DB) errorf(url, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &redactedError{msg: db.target + ": " + oneLine(redact(err.Error(), url)), err: err}
}

// redactedError keeps the wrapped error for errors.Is and errors.As, and
// prints only the redacted message.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact replaces in s every form of the password that rawURL holds (in
// its user info or a password parameter), raw and escaped.
func redact(s, rawURL string) string {
	var secrets []string
	if u, err := url.Parse(rawURL); err == nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		secrets = append(secrets, u.Query()["password"]...)
	}
	// A URL that does not parse may still hold user:password@.
	if _, rest, ok := strings.Cut(rawURL, "://"); ok {
		if userinfo, _, ok := strings.Cut(rest, "@"); ok {
			if _, p, ok := strings.Cut(userinfo, ":"); ok {
				secrets = append(secrets, p)
			}
		}
	}
	for _, p := range secrets {
		if p == "" {
			continue
		}
		for _, form := range []string{p, url.QueryEscape(p), url.PathEscape(p)} {
			s = strings.ReplaceAll(s, form, "xxxxx")
		}
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// opContext returns the context of one journal operation.
func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
