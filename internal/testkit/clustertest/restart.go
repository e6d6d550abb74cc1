package clustertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
)

// Taking the server or its PostgreSQL down and up again mid-run, and waiting
// for the cluster to answer.

// RestartServer stops the server process (SIGTERM, then SIGKILL after
// stopTimeout), or with kill set kills it at once (SIGKILL), calls down
// while it is down, then starts it again on the same ports and
// databases and waits until it answers. If down panics the server is
// started again all the same.
func (c *Cluster) RestartServer(ctx context.Context, kill bool, down func()) (err error) {
	c.mu.Lock()
	p := c.server
	c.mu.Unlock()
	if kill {
		p.Stop(0)
	} else {
		p.Stop(stopTimeout)
	}
	defer func() {
		if serr := c.startServer(); serr != nil {
			err = errors.Join(err, serr)
			return
		}
		if herr := c.WaitHealthy(ctx); herr != nil {
			err = errors.Join(err, herr)
		}
	}()
	down()
	return nil
}

// WaitHealthy waits until the frontend answers a health check and the
// namespace default answers.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	var last error
	for {
		c.mu.Lock()
		p := c.server
		c.mu.Unlock()
		hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
		_, last = c.Client.CheckHealth(hctx, &client.CheckHealthRequest{})
		if last == nil {
			_, last = c.Client.WorkflowService().GetSystemInfo(hctx, nil)
		}
		hcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("the Temporal server exited (%v): %s", p.Err(), c.logTail("server.log"))
		case <-ctx.Done():
			return fmt.Errorf("the Temporal server at %s did not answer within %v: %v", c.HostPort, healthTimeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// RestartPostgres restarts the private PostgreSQL that Start started (not
// one given by Options.PostgresURL: that is pgtest.Restart's), calling
// down while it is stopped.
func (c *Cluster) RestartPostgres(ctx context.Context, down func()) error {
	if c.pg == nil {
		return errors.New("the cluster's PostgreSQL is not its own: restart it where it was started (pgtest.Restart)")
	}
	return c.pg.Restart(ctx, down)
}
