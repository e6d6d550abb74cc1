// Command providerfake serves the tests' own model provider
// (internal/testkit/providerfake): OpenAI's Chat Completions and
// Anthropic's Messages on one address, under one shared requests-per-minute
// and tokens-per-minute limit, with prompt caches. It prints
// "providerfake listening on http://HOST:PORT" once it accepts
// connections, and serves until SIGTERM or SIGINT. A bad flag is one line
// on stderr and exit status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/providerfake"
)

func main() {
	fs := flag.NewFlagSet("providerfake", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is printed on one line below
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	var cfg providerfake.Config
	fs.IntVar(&cfg.RPM, "rpm", providerfake.DefaultRPM, "requests per minute, all clients together")
	fs.IntVar(&cfg.TPM, "tpm", providerfake.DefaultTPM, "tokens per minute (input estimated at 4 bytes a token, plus output), all clients together")
	fs.IntVar(&cfg.Turns, "turns", providerfake.DefaultTurns, "tool results a conversation holds before the final text answer")
	fs.IntVar(&cfg.MinCacheTokens, "min-cache", providerfake.DefaultMinCacheTokens, "shortest cached prompt prefix, in tokens")
	fs.DurationVar(&cfg.CacheTTL, "cache-ttl", providerfake.DefaultCacheTTL, "how long a cached prefix lives after its last use")
	fs.DurationVar(&cfg.Window, "window", providerfake.DefaultWindow, "the sliding window the limits count over")
	logReq := fs.Bool("log", false, "log one line per request on stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			os.Exit(0)
		}
		fail(err)
	}
	if fs.NArg() > 0 {
		fail(fmt.Errorf("unexpected argument %q: providerfake takes flags only (-h lists them)", fs.Arg(0)))
	}
	for name, v := range map[string]int{"rpm": cfg.RPM, "tpm": cfg.TPM, "turns": cfg.Turns, "min-cache": cfg.MinCacheTokens} {
		if v <= 0 {
			fail(fmt.Errorf("-%s %d: want a positive number", name, v))
		}
	}
	for name, v := range map[string]time.Duration{"cache-ttl": cfg.CacheTTL, "window": cfg.Window} {
		if v <= 0 {
			fail(fmt.Errorf("-%s %v: want a positive duration, e.g. 1m", name, v))
		}
	}
	if *logReq {
		cfg.Log = os.Stderr
	}
	if err := run(*addr, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "providerfake:", err)
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "providerfake:", err)
	os.Exit(2)
}

func run(addr string, cfg providerfake.Config) error {
	s, err := providerfake.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("providerfake listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
