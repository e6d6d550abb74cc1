// Command codecserver is the codec server the Temporal Web UI and the
// temporal CLI call to read agentrun's runs: it decrypts payloads with the
// keys of AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE and shows values
// kept by reference inline, read from the content store of
// AGENTRUN_JOURNAL (see package internal/codecserver and docs/privacy.md).
// It listens on AGENTRUN_CODEC_ADDR (default 127.0.0.1:8234), admits the
// Web UI origins of AGENTRUN_CODEC_ORIGINS (default http://localhost:8233)
// and the Host names of AGENTRUN_CODEC_HOSTS beside its own and refuses
// other requests, and, with AGENTRUN_CODEC_TOKEN set, asks every request
// for that bearer token; beyond loopback it will not start without one.
// Point the CLI at it with
// `temporal workflow show --codec-endpoint http://127.0.0.1:8234`, a dev
// server with `--ui-codec-endpoint http://127.0.0.1:8234`, or the Web UI's
// codec server setting. A setting it cannot use stops it at start-up with
// one line naming the variable (exit 2). SIGTERM or SIGINT stops it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/codecserver"
)

func main() {
	logger, cfg := cli.StartService("codecserver")
	if err := codecserver.CheckListen(cfg.CodecServer.Addr, cfg.CodecServer.Token); err != nil {
		fmt.Fprintln(os.Stderr, "codecserver:", err)
		os.Exit(cli.ExitSettings)
	}
	if err := run(cli.Settings{Config: cfg}, logger); err != nil {
		fmt.Fprintln(os.Stderr, "codecserver:", err)
		os.Exit(cli.ExitError)
	}
}

func run(s cli.Settings, logger *slog.Logger) error {
	store, err := s.Content()
	if err != nil {
		return fmt.Errorf("content store: %w", err)
	}
	ln, err := net.Listen("tcp", s.CodecServer.Addr)
	if err != nil {
		return fmt.Errorf("AGENTRUN_CODEC_ADDR: %w", err)
	}
	// A name it was given to listen on (codec.internal:8234) is one a
	// request's Host may hold, beside the address it is bound to.
	hosts := append(slices.Clone(s.CodecServer.Hosts), s.CodecServer.Addr)
	srv := &http.Server{
		Handler: codecserver.Handler(codecserver.Options{
			Codec:   s.Codec,
			Content: store,
			Addr:    ln.Addr().String(),
			Origins: s.CodecServer.Origins,
			Hosts:   hosts,
			Token:   s.CodecServer.Token,
		}),
		// A client gets 10 s for its headers and 30 s for its whole
		// request (a 64 MiB body at most), the server 60 s to write the
		// answer (reading the blobs of a request takes at most 30 s); an
		// idle keep-alive connection is closed after 2 minutes.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	keys := "none (payloads pass as they are)"
	if s.Codec != nil {
		keys = strings.Join(s.Codec.KeyIDs(), ", ")
	}
	logger.Info("codec server listening", "endpoint", "http://"+ln.Addr().String(), "keys", keys,
		"origins", strings.Join(s.CodecServer.Origins, ","), "hosts", strings.Join(s.CodecServer.Hosts, ","), "token", s.CodecServer.Token != "")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut) //nolint:errcheck // exiting either way
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
