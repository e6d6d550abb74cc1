package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/testkit"
)

// EnvURL names the variable with the URL of an existing server to use
// instead of a private cluster.
const EnvURL = "AGENTRUN_TEST_POSTGRES_URL"

// External reports whether EnvURL names an existing server to use.
func External() bool { return os.Getenv(EnvURL) != "" }

// startTimeout bounds initdb and pg_ctl start (pg_ctl -w waits for the
// server to accept connections); a 2-core CI machine needs a few seconds.
const startTimeout = 2 * time.Minute

// dbTimeout bounds creating or dropping one test database.
const dbTimeout = 30 * time.Second

// cluster is the private cluster of this test process.
type cluster struct {
	dir    string // the temporary folder: data, socket, log, password file
	bin    string // the folder of initdb, pg_ctl
	owner  string // the user that runs the server; "" for the current user
	port   int
	secret string // the superuser's password
}

var (
	once     sync.Once
	private  *cluster
	startErr error
	serial   atomic.Int64
)

// URL returns the URL of a new, empty database for this test, dropped when
// the test ends. The URL holds a password; do not log it.
func URL(t testing.TB) string {
	t.Helper()
	base, err := baseURL()
	if err != nil {
		testkit.Unavailable(t, "PostgreSQL", err)
	}
	name := fmt.Sprintf("agentrun_test_%d_%d", os.Getpid(), serial.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	if err := admin(ctx, base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("PostgreSQL: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
		defer cancel()
		if err := admin(ctx, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("PostgreSQL: drop database %s: %v", name, err)
		}
	})
	u, _ := url.Parse(base) // baseURL returned a parsed URL
	u.Path = "/" + name
	return u.String()
}

// ServerURL returns the URL of the maintenance database of the server that
// URL creates databases on ($AGENTRUN_TEST_POSTGRES_URL, or the private
// cluster of this test process, started on first use), for a test helper
// that keeps databases of its own there for the whole process (the cluster
// tests' Temporal server, internal/testkit/clustertest). The URL holds a password;
// do not log it.
func ServerURL() (string, error) { return baseURL() }

// baseURL returns the URL of the server's maintenance database, starting
// the private cluster on first use.
func baseURL() (string, error) {
	if u := os.Getenv(EnvURL); u != "" {
		if _, err := url.Parse(u); err != nil {
			return "", fmt.Errorf("%s is not a URL", EnvURL)
		}
		return u, nil
	}
	once.Do(func() { private, startErr = start() })
	if startErr != nil {
		return "", startErr
	}
	return private.url("postgres"), nil
}

// admin runs one statement on the database at base.
func admin(ctx context.Context, base, sql string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func (c *cluster) url(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("postgres", c.secret),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the port of the private cluster, or 0 when none runs.
func Port() int {
	if private == nil {
		return 0
	}
	return private.port
}

// start creates and starts the private cluster.
func start() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, errors.New("running as root and there is no user postgres to own the cluster (install Debian's postgresql package)")
		}
		c.owner = "postgres"
	}
	if c.dir, err = os.MkdirTemp(tempBase(c.owner != ""), "agentrun-pgtest-"); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.stop()
		}
	}()
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	c.secret = hex.EncodeToString(secret)
	pwfile := filepath.Join(c.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	if c.owner != "" {
		if err := chownTree(c.dir, c.owner); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if out, err := c.run(ctx, "initdb", "-D", filepath.Join(c.dir, "data"), "-U", "postgres", "-A", "scram-sha-256",
		"--pwfile", pwfile, "-E", "UTF8", "--no-locale"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, lastLines(out))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := c.startServer(ctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// Start starts a new private cluster, apart from the one URL shares, for a
// program that is not a test (the bench): it returns the URL of its
// maintenance database "postgres" (holding a password: do not log it) and
// the function that stops the cluster and removes its folder. It ignores
// EnvURL.
func Start() (url string, stop func(), err error) {
	c, err := start()
	if err != nil {
		return "", nil, err
	}
	return c.url("postgres"), c.stop, nil
}

// Cluster is a private cluster for a program that is not a test, like
// Start's, that can also be restarted.
type Cluster struct{ c *cluster }

// StartCluster starts a new private cluster, as Start does; the caller
// stops it with Stop.
func StartCluster() (*Cluster, error) {
	c, err := start()
	if err != nil {
		return nil, err
	}
	return &Cluster{c}, nil
}

// URL is the URL of the maintenance database "postgres"; it holds a
// password: do not log it.
func (c *Cluster) URL() string { return c.c.url("postgres") }

// Stop stops the cluster and removes its folder.
func (c *Cluster) Stop() { c.c.stop() }

// Restart stops the server (pg_ctl stop -m fast), calls down while it is
// stopped, and starts it again on the same port with the same data, so
// URLs stay valid. If down panics the server is started again all the same.
func (c *Cluster) Restart(ctx context.Context, down func()) (err error) {
	if err := c.c.stopServer(ctx); err != nil {
		return err
	}
	defer func() {
		if serr := c.c.startServer(ctx); serr != nil && err == nil {
			err = serr
		}
	}()
	down()
	return nil
}

// startServer starts the cluster's server on its port and waits until it
// accepts connections.
func (c *cluster) startServer(ctx context.Context) error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=on -c max_connections=200",
		c.port, c.dir)
	if out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "110", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s %s", err, lastLines(out), lastLines(log))
	}
	return nil
}

// stopServer stops the cluster's server (pg_ctl stop -m fast: sessions are
// terminated, open transactions roll back, committed ones stay) and waits
// until it is down. The data folder stays.
func (c *cluster) stopServer(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "stop", "-m", "fast", "-w", "-D", filepath.Join(c.dir, "data")); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, lastLines(out))
	}
	return nil
}

// restartMu keeps restarts of the private cluster one at a time.
var restartMu sync.Mutex

// Restart stops the private cluster's server, calls down while it is
// stopped, and starts it again on the same port with the same data, so
// that the URLs returned before stay valid. Every database of the test
// process is down meanwhile: a test that calls Restart must not run in
// parallel with other tests of its process that use PostgreSQL.
//
// With $AGENTRUN_TEST_POSTGRES_URL set there is no cluster to restart and
// the test is skipped, saying so (also under CI=true: that server is
// someone else's). Call URL first: it starts the private cluster.
func Restart(t testing.TB, down func()) {
	t.Helper()
	if os.Getenv(EnvURL) != "" {
		t.Skipf("%s points at an external server: pgtest restarts only its private cluster", EnvURL)
	}
	if private == nil {
		t.Fatal("pgtest.Restart: no private cluster runs (call URL first)")
	}
	restartMu.Lock()
	defer restartMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := private.stopServer(ctx); err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	started := false
	defer func() {
		if !started { // down failed the test: bring the server back for the others
			_ = private.startServer(ctx)
		}
	}()
	down()
	started = true
	if err := private.startServer(ctx); err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
}

// Stop stops the private cluster, if this process started one, and removes
// its folder. Call it from TestMain after m.Run.
func Stop() {
	if private != nil {
		private.stop()
	}
}

func (c *cluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(c.dir, "data", "postmaster.pid")); err == nil {
		if err := c.stopServer(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
	}
	_ = os.RemoveAll(c.dir)
}

// maxSocketDir is the longest folder that can hold the server's socket
// ".s.PGSQL.<port>": a unix socket path has at most 107 bytes.
const maxSocketDir = 80

// tempBase returns the folder for the cluster's temporary folder: the
// system's, unless the socket path would be too long there or, for a
// cluster run as another user, that user could not reach it (a TMPDIR
// inside root's home); then /tmp.
func tempBase(otherUser bool) string {
	base := os.TempDir()
	if len(base)+len("/agentrun-pgtest-0123456789") > maxSocketDir {
		return "/tmp"
	}
	if otherUser {
		for dir := base; ; dir = filepath.Dir(dir) {
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o001 == 0 {
				return "/tmp"
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return base
}

// run runs one of the PostgreSQL programs as the cluster's owner.
func (c *cluster) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.owner != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.owner, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// binDir finds the folder of initdb and pg_ctl.
func binDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) }) // newest first
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	if path, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(path), nil
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb): install Debian's postgresql package, or set %s", EnvURL)
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// chownTree gives dir and what it holds to the named user.
func chownTree(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// lastLines returns the end of a program's output, on one line.
func lastLines(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return strings.Join(strings.Fields(s), " ")
}
