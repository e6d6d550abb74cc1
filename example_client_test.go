package agentrun_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun"
)

// A Go program approves the calls its own rules allow and denies the
// others, reading each call's arguments as the tool's input type. (It
// needs a Temporal server and agentrun's workers, so it is not run here.)
func Example_client() {
	ctx := context.Background()
	tc, err := client.Dial(client.Options{HostPort: "localhost:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer tc.Close()
	c, err := agentrun.NewClient(tc, agentrun.ClientOptions{})
	if err != nil {
		log.Fatal(err)
	}
	run, err := c.Start(ctx, agentrun.StartOptions{ID: "access-1234", Prompt: "I need read access to the orders database."})
	if err != nil {
		log.Fatal(err)
	}

	// Later, or in another process: c.Run("access-1234").
	calls, err := run.Pending(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, call := range calls {
		var ticket struct {
			Title string `json:"title"`
		}
		if call.Tool != "create_ticket" || call.Args(&ticket) != nil {
			continue
		}
		// Pinned to the arguments just read: if others are pending by
		// now, the run refuses it with ErrDigestMismatch.
		if ticket.Title != "" {
			_, err = run.Approve(ctx, call.Marker, call.Digest)
		} else {
			_, err = run.Deny(ctx, call.Marker, call.Digest, "a ticket needs a title")
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	res, err := run.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if res.Status == agentrun.StatusCompleted {
		fmt.Println(res.Answer)
	}
}

// A refusal is typed: the run's reason is in a *RefusedError, and
// errors.Is tells the common cases apart.
func ExampleRefusedError() {
	ctx := context.Background()
	tc, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	c, _ := agentrun.NewClient(tc, agentrun.ClientOptions{})
	_, err = c.Run("access-1234").Approve(ctx, "tool/2/0/create_ticket", "sha256:0123456789abcdef")
	var refused *agentrun.RefusedError
	switch {
	case errors.Is(err, agentrun.ErrRunNotFound):
		fmt.Println("no such run")
	case errors.Is(err, agentrun.ErrRunEnded):
		fmt.Println("the run ended:", err)
	case errors.Is(err, agentrun.ErrDigestMismatch):
		fmt.Println("the arguments changed since they were read: look again")
	case errors.As(err, &refused):
		fmt.Println("refused:", refused.Reason)
	case err != nil:
		log.Fatal(err)
	}
}
