package prometheus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// hostname matches a DNS name.
var hostname = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// ValidateAddr checks a listen address, HOST:PORT or :PORT, with PORT from
// 1 to 65535 and HOST an IP address or a host name. "[::1]:9464" is an IPv6
// host.
func ValidateAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil && !hostname.MatchString(host) {
		return fmt.Errorf("host %q is not an IP address or a host name", host)
	}
	return nil
}

// Health states of an Endpoint.
const (
	starting int32 = iota
	ready
	stopping
)

// readHeaderTimeout bounds how long a scraper may take to send its request
// headers, so that a stuck client cannot hold a connection open forever.
const readHeaderTimeout = 10 * time.Second

// Endpoint serves /metrics and /healthz on one address. Its Provider is the
// MeterProvider every metric of the process goes through.
type Endpoint struct {
	// Provider exports through the endpoint's Prometheus registry.
	Provider *sdkmetric.MeterProvider
	// Addr is the address it listens on, with the port resolved.
	Addr string

	state atomic.Int32
	srv   *http.Server
	done  chan error
}

// Listen starts serving on addr (HOST:PORT or :PORT; check it with
// ValidateAddr first; port 0 picks a free port). /healthz answers 503 until
// Ready. A port already in use is an error here, not later.
func Listen(addr string) (*Endpoint, error) {
	e, err := newEndpoint()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = e.Provider.Shutdown(context.Background())
		return nil, err
	}
	e.Addr = ln.Addr().String()
	e.done = make(chan error, 1)
	go func() { e.done <- e.srv.Serve(ln) }()
	return e, nil
}

// newEndpoint builds the registry, the MeterProvider and the handlers,
// without listening.
func newEndpoint() (*Endpoint, error) {
	reg := promclient.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	e := &Endpoint{Provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", e.health)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout}
	return e, nil
}

func (e *Endpoint) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch e.state.Load() {
	case ready:
		fmt.Fprintln(w, "ok: polling")
	case stopping:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "stopping")
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "starting: not polling yet")
	}
}

// Ready makes /healthz answer 200: the worker is polling.
func (e *Endpoint) Ready() { e.state.Store(ready) }

// Stopping makes /healthz answer 503 for good: the worker is stopping.
func (e *Endpoint) Stopping() { e.state.Store(stopping) }

// SDKHandler is the Temporal sdk's metrics handler (client.Options
// MetricsHandler) on the endpoint's provider. Its counters are monotonic,
// so Prometheus sees them as counters (temporal_request_total). onError
// receives what the meter refuses; nil ignores it (the sdk's default
// panics).
func (e *Endpoint) SDKHandler(onError func(error)) client.MetricsHandler {
	if onError == nil {
		onError = func(error) {}
	}
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                e.Provider.Meter("go.temporal.io/sdk"),
		OnError:              onError,
		UseMonotonicCounters: true,
	})
}

// Close stops serving, waiting for requests in flight until ctx is done,
// and shuts the provider down.
func (e *Endpoint) Close(ctx context.Context) error {
	e.Stopping()
	err := e.srv.Shutdown(ctx)
	if e.done != nil {
		if serr := <-e.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	return errors.Join(err, e.Provider.Shutdown(ctx))
}
