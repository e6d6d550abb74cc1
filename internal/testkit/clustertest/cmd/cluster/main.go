// Command cluster runs the compose file's topology on this machine without
// Docker, for `make cluster` (scripts/cluster.sh starts it in the
// background): a private PostgreSQL (Debian's), the Temporal server on it
// with deploy/'s configuration and set-up scripts (internal/testkit/clustertest),
// the role and database agentrun for the workers' journal, and the Web UI.
// It prints the settings for the workers, then "cluster ready", and keeps
// everything running until SIGTERM or SIGINT (make stop), when it stops it
// all. An error (a port in use, no PostgreSQL binaries, a program not
// built) is one line, after what had started is stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrun/agentrun/internal/testkit/clustertest"
)

func main() {
	dir := flag.String("dir", ".agentrun/cluster", "folder for the logs")
	port := flag.Int("port", 7233, "the frontend's port on 127.0.0.1 (the other server ports are the server's defaults)")
	uiPort := flag.Int("ui-port", 8233, "the Web UI's port on 127.0.0.1")
	flag.Parse()
	if err := run(*dir, *port, *uiPort); err != nil {
		fmt.Fprintf(os.Stderr, "make cluster: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string, port, uiPort int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ports := clustertest.DefaultPorts()
	ports.Frontend = port
	c, err := clustertest.Start(ctx, clustertest.Options{Dir: dir, Ports: &ports, UIPort: uiPort, LogLevel: "warn"})
	if err != nil {
		return err
	}
	defer c.Stop()
	journal, err := c.AgentrunDatabase(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("Temporal frontend %s, Web UI %s, logs in %s\n", c.HostPort, c.UIURL, dir)
	fmt.Printf("workers: TEMPORAL_ADDRESS=%s AGENTRUN_JOURNAL=%s\n", c.HostPort, journal)
	fmt.Println("cluster ready")
	<-ctx.Done()
	fmt.Println("stopping the cluster")
	return nil
}
