package clustertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// The files under deploy/ that every cluster runs, from the repository's
// root: docker-compose.yml's services run the same ones (go test ./deploy
// checks it).
const (
	ServerScript = "deploy/temporal-server.sh"
	ServerConfig = "deploy/temporal-server.yaml"
	SchemaScript = "deploy/temporal-schema.sh"
	SetupScript  = "deploy/temporal-setup.sh"
	UIConfig     = "deploy/temporal-ui.yaml"
	// AgentrunDBScript creates agentrun's own role and database (the
	// workers' AGENTRUN_JOURNAL) on the same PostgreSQL.
	AgentrunDBScript = "deploy/agentrun-db.sh"
)

// The programs under bin/ (make temporal-server builds them).
const (
	serverProgram = "bin/temporal-server"
	sqlTool       = "bin/temporal-sql-tool"
	uiProgram     = "bin/temporal-ui-server"
)

// Bounds on each stage. The schema takes ~6 s and the server ~10 s to
// answer on an idle 2-core machine; a loaded one (a test run) takes
// several times that. temporal-setup.sh waits for the server by itself,
// up to 3 minutes. A stopped server gets stopTimeout to shut down in order
// before it is killed.
const (
	schemaTimeout = 3 * time.Minute
	setupTimeout  = 4 * time.Minute
	healthTimeout = 3 * time.Minute
	uiTimeout     = time.Minute
	stopTimeout   = 30 * time.Second
)

// Options say where a cluster keeps its state and listens.
type Options struct {
	// Root is the repository's root, with deploy/ and bin/; default
	// testkit.Root().
	Root string
	// Dir is the folder for the logs (schema.log, server.log, setup.log,
	// ui.log), created if missing. Required.
	Dir string
	// PostgresURL is the URL of a superuser's maintenance database on the
	// PostgreSQL to keep Temporal's databases on; "" starts a private
	// PostgreSQL (pgtest.StartCluster, Debian's binaries), stopped with the
	// cluster.
	PostgresURL string
	// Database names the default store's database; the visibility store's
	// is Database + "_visibility". Default "temporal".
	Database string
	// Ports are the server's ports; nil picks free ones.
	Ports *Ports
	// UIPort is the Web UI's port on 127.0.0.1; 0 starts no Web UI.
	UIPort int
	// CLI is the temporal CLI that registers the search attributes; ""
	// is devserver.CLI() (bin/temporal or $AGENTRUN_TEMPORAL_CLI).
	CLI string
	// LogLevel is the server's log level; default "warn".
	LogLevel string
}

// Cluster is a running Temporal server on PostgreSQL, with its Web UI when
// asked for.
type Cluster struct {
	// HostPort is the frontend's address.
	HostPort string
	// UIURL is the Web UI's address, "" without one.
	UIURL string
	// CLI is the temporal CLI.
	CLI string
	// Client is a client of the cluster's namespace default (with the
	// suite's codec when testenv.SuiteKeys is set).
	Client client.Client

	opts    Options
	ports   Ports
	pgURL   string // the maintenance database: holds a password
	pg      *pgtest.Cluster
	env     []string
	mu      sync.Mutex
	server  *testenv.Proc
	ui      *testenv.Proc
	dropDBs bool
}

// Start starts a cluster: PostgreSQL (or opts.PostgresURL), the schemas
// (SchemaScript), the server (ServerScript with ServerConfig), agentrun's
// search attributes and the namespace default (SetupScript), and the Web
// UI when opts.UIPort is set. On an error it stops what it started. Stop
// it with Stop.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("clustertest: Options.Dir is empty")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	opts.Root = cmp.Or(opts.Root, testkit.Root())
	opts.Database = cmp.Or(opts.Database, "temporal")
	opts.LogLevel = cmp.Or(opts.LogLevel, "warn")
	if opts.CLI == "" {
		if opts.CLI, err = devserver.CLI(); err != nil {
			return nil, err
		}
	}
	progs := []string{serverProgram, sqlTool}
	if opts.UIPort != 0 {
		progs = append(progs, uiProgram)
	}
	for _, p := range progs {
		if _, err := os.Stat(filepath.Join(opts.Root, p)); err != nil {
			return nil, fmt.Errorf("no %s: run make temporal-server", p)
		}
	}
	c = &Cluster{opts: opts, CLI: opts.CLI}
	if opts.Ports != nil {
		c.ports = *opts.Ports
	} else if c.ports, err = freePorts(); err != nil {
		return nil, err
	}
	if err := c.checkPorts(); err != nil {
		return nil, err
	}
	c.HostPort = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports.Frontend))

	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	c.pgURL = opts.PostgresURL
	if c.pgURL == "" {
		if c.pg, err = pgtest.StartCluster(); err != nil {
			// pgtest's advice to name a server by URL is for tests.
			return c, fmt.Errorf("PostgreSQL: %s", strings.TrimSuffix(err.Error(), ", or set "+pgtest.EnvURL))
		}
		c.pgURL = c.pg.URL()
	} else {
		c.dropDBs = true
	}
	u, err := url.Parse(c.pgURL)
	if err != nil {
		return c, errors.New("the PostgreSQL URL does not parse")
	}
	pw, _ := u.User.Password()
	c.env = append(os.Environ(),
		"DB=postgres12",
		"POSTGRES_SEEDS="+u.Hostname(), "DB_PORT="+cmp.Or(u.Port(), "5432"),
		"POSTGRES_USER="+u.User.Username(), "POSTGRES_PWD="+pw, "SQL_PASSWORD="+pw,
		"DBNAME="+opts.Database, "VISIBILITY_DBNAME="+opts.Database+"_visibility",
		"TEMPORAL_SQL_TOOL="+filepath.Join(opts.Root, sqlTool),
		"TEMPORAL_SERVER="+filepath.Join(opts.Root, serverProgram),
		"TEMPORAL_CLI="+opts.CLI,
		"TEMPORAL_ADDRESS="+c.HostPort, "TEMPORAL_NAMESPACE=default",
		"LOG_LEVEL="+opts.LogLevel,
		"BIND_ON_IP=127.0.0.1",
		// What a user's environment might set for the server: the
		// script's default, next to the configuration, applies.
		"DYNAMIC_CONFIG_FILE_PATH=",
	)
	c.env = append(c.env, c.ports.env()...)

	sctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	defer cancel()
	if err := c.script(sctx, SchemaScript, "schema.log"); err != nil {
		return c, err
	}
	if err := c.startServer(); err != nil {
		return c, err
	}
	if err := c.setup(ctx); err != nil {
		return c, err
	}
	if opts.UIPort != 0 {
		if err := c.startUI(ctx); err != nil {
			return c, err
		}
	}
	if c.Client, err = c.dial(ctx); err != nil {
		return c, err
	}
	return c, nil
}

func (c *Cluster) startServer() error {
	p, err := c.start("server.log", "sh", filepath.Join(c.opts.Root, ServerScript))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.server = p
	c.mu.Unlock()
	return nil
}

// setup runs SetupScript (it waits for the server to answer), and fails
// at once if the server exits meanwhile.
func (c *Cluster) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.script(ctx, SetupScript, "setup.log") }()
	select {
	case err := <-errc:
		return err
	case <-c.server.Exited():
		cancel()
		<-errc
		return fmt.Errorf("the Temporal server exited (%v): %s", c.server.Err(), c.logTail("server.log"))
	}
}

func (c *Cluster) startUI(ctx context.Context) error {
	c.env = append(c.env, "TEMPORAL_UI_PORT="+strconv.Itoa(c.opts.UIPort))
	p, err := c.start("ui.log", filepath.Join(c.opts.Root, uiProgram),
		"--root", filepath.Join(c.opts.Root, "deploy"), "--config", ".", "--env", strings.TrimSuffix(filepath.Base(UIConfig), ".yaml"), "start")
	if err != nil {
		return err
	}
	c.ui = p
	c.UIURL = "http://127.0.0.1:" + strconv.Itoa(c.opts.UIPort)
	deadline := time.Now().Add(uiTimeout)
	for {
		resp, err := http.Get(c.UIURL + "/api/v1/settings")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("the Web UI server exited (%v): %s", p.Err(), c.logTail("ui.log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Web UI did not answer at %s within %v: %s", c.UIURL, uiTimeout, c.logTail("ui.log"))
		}
	}
}

// dial returns a client of the namespace default, with the suite's codec
// when one is set.
func (c *Cluster) dial(ctx context.Context) (client.Client, error) {
	opts := client.Options{HostPort: c.HostPort, Namespace: "default",
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	cdc, err := testenv.SuiteCodec()
	if err != nil {
		return nil, err
	}
	if cdc != nil {
		cluster.WithCodec(&opts, cdc)
	}
	return client.DialContext(ctx, opts)
}

// ServerPID is the server process's pid.
func (c *Cluster) ServerPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server.Pid()
}

// Stop stops the Web UI, the server and the private PostgreSQL, and drops
// Temporal's databases from a PostgreSQL given by Options.PostgresURL.
// Safe on a cluster that started only in part.
func (c *Cluster) Stop() {
	if c.Client != nil {
		c.Client.Close()
	}
	c.ui.Stop(stopTimeout)
	c.mu.Lock()
	p := c.server
	c.mu.Unlock()
	p.Stop(stopTimeout)
	if c.pg != nil {
		c.pg.Stop()
	}
	if c.dropDBs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, db := range []string{c.opts.Database, c.opts.Database + "_visibility"} {
			if err := dropDatabase(ctx, c.pgURL, db); err != nil {
				fmt.Fprintf(os.Stderr, "clustertest: drop database %s: %v\n", db, err)
			}
		}
	}
}

// AgentrunDatabase creates the role and database agentrun (password
// agentrun, as in docker-compose.yml) on the cluster's PostgreSQL with
// AgentrunDBScript, and returns the URL the workers' AGENTRUN_JOURNAL
// takes. It needs psql and pg_isready (Debian's postgresql-client).
func (c *Cluster) AgentrunDatabase(ctx context.Context) (string, error) {
	u, err := url.Parse(c.pgURL)
	if err != nil {
		return "", errors.New("the PostgreSQL URL does not parse")
	}
	pw, _ := u.User.Password()
	env := append(c.env, "PGHOST="+u.Hostname(), "PGPORT="+cmp.Or(u.Port(), "5432"), "PGUSER="+u.User.Username(),
		"PGPASSWORD="+pw, "DB_USER=agentrun", "DB_NAME=agentrun", "DB_PASSWORD=agentrun")
	saved := c.env
	c.env = env
	err = c.script(ctx, AgentrunDBScript, "agentrun-db.log")
	c.env = saved
	if err != nil {
		return "", err
	}
	j := url.URL{Scheme: "postgres", User: url.UserPassword("agentrun", "agentrun"), Host: u.Host, Path: "/agentrun", RawQuery: "sslmode=disable"}
	return j.String(), nil
}

// Env returns the environment for a child process that talks to the
// cluster.
func (c *Cluster) Env(extra ...string) []string {
	return append(append(os.Environ(), "TEMPORAL_ADDRESS="+c.HostPort, "TEMPORAL_NAMESPACE=default"), extra...)
}

// Server is the cluster as a testenv.Server, for the helpers that take
// one (the fleet tests).
func (c *Cluster) Server() *testenv.Server {
	return &testenv.Server{HostPort: c.HostPort, Client: c.Client, CLI: c.CLI}
}
