package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/plumbing/secret"
)

// Options loads the client options from the environment and the profile
// file, like the temporal CLI. The TLS client key file
// (TEMPORAL_TLS_CLIENT_KEY_PATH, or the profile's tls.client_key_path) is
// read as a key file (secret.ReadKeyFile): one that group or others may
// read is a *config.Error. The key and the API key go to the scrubber.
func Options(logger *slog.Logger) (client.Options, error) {
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client settings: %w", err)
	}
	secret.Add(prof.APIKey)
	if t := prof.TLS; t != nil {
		if t.ClientKeyPath != "" && t.ClientCertPath != "" { // one alone: the sdk says what is missing
			key, err := secret.ReadKeyFile("TEMPORAL_TLS_CLIENT_KEY_PATH (or the profile's tls.client_key_path)", t.ClientKeyPath)
			if err != nil {
				return client.Options{}, &config.Error{Err: err}
			}
			cert, err := os.ReadFile(t.ClientCertPath)
			if err != nil {
				return client.Options{}, config.Errorf("TEMPORAL_TLS_CLIENT_CERT_PATH: %w", err)
			}
			t.ClientKeyPath, t.ClientKeyData, t.ClientCertPath, t.ClientCertData = "", key, "", cert
		}
		secret.AddKey(string(t.ClientKeyData))
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client settings: %w", err)
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	if opts.HostPort == "" {
		opts.HostPort = client.DefaultHostPort
	}
	if logger != nil {
		opts.Logger = tlog.NewStructuredLogger(logger)
	}
	return opts, nil
}

// Conn is a client of one namespace.
type Conn struct {
	client.Client
	Namespace string
	HostPort  string
	// DataConverter is the client's data converter, for payloads read
	// from a history or a description (memo, activity inputs and
	// results). Default (nil): the sdk's default.
	DataConverter converter.DataConverter
}

// Converter is c's data converter: DataConverter, or the sdk's default.
func (c *Conn) Converter() converter.DataConverter {
	if c.DataConverter == nil {
		return converter.GetDefaultDataConverter()
	}
	return c.DataConverter
}

// WithCodec sets opts' data and failure converters to encrypt with cdc
// (package codec): payloads, failure messages and stack traces. With cdc
// nil it leaves opts as they are: the sdk's defaults, plain JSON.
func WithCodec(opts *client.Options, cdc *codec.Codec) {
	if cdc == nil {
		return
	}
	opts.DataConverter = codec.DataConverter(cdc)
	opts.FailureConverter = codec.FailureConverter(cdc)
}

// Dial connects to the cluster the environment names. metrics, when not
// nil, receives the sdk's metrics (requests, polls, task latencies). cdc,
// when not nil, encrypts every payload and failure the client and its
// workers send, and decrypts what they receive (config.Config's Codec).
// compression is the client's gRPC compression (config.Config's
// GRPCCompression): nil, the sdk's default, gzip.
//
// interceptors go on the client and on every worker built from it: the
// tracing interceptor (plumbing/tracing/export's Provider.ClientInterceptors),
// none when tracing is off.
func Dial(ctx context.Context, logger *slog.Logger, metrics client.MetricsHandler, cdc *codec.Codec, compression client.GrpcCompression, interceptors ...interceptor.ClientInterceptor) (*Conn, error) {
	opts, err := dialOptions(logger, metrics, cdc, compression, interceptors)
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w; is the server running? (make dev-server, or set TEMPORAL_ADDRESS)", opts.HostPort, opts.Namespace, err)
	}
	return &Conn{Client: c, Namespace: opts.Namespace, HostPort: opts.HostPort, DataConverter: codec.DataConverter(cdc)}, nil
}

// dialOptions are the options Dial dials with: Options and Dial's arguments.
func dialOptions(logger *slog.Logger, metrics client.MetricsHandler, cdc *codec.Codec, compression client.GrpcCompression, interceptors []interceptor.ClientInterceptor) (client.Options, error) {
	opts, err := Options(logger)
	if err != nil {
		return client.Options{}, err
	}
	if metrics != nil {
		opts.MetricsHandler = metrics
	}
	WithCodec(&opts, cdc)
	if compression != nil {
		opts.ConnectionOptions.GrpcCompression = compression
	}
	opts.Interceptors = append(opts.Interceptors, interceptors...)
	return opts, nil
}
