package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
)

// TestTracingSettings: tracing is off without an endpoint or an exporter,
// with OTEL_TRACES_EXPORTER=none and with OTEL_SDK_DISABLED=true; the
// exporter, protocol, endpoint, service name, sampler and content capture
// are read when set (the traces protocol and endpoint win over the general
// ones; http/protobuf appends /v1/traces to the general endpoint); a
// malformed endpoint, an unknown exporter or protocol, an unknown sampler, a
// ratio out of range, a capture that is not a boolean, and a capture with
// the codec on are each a one-line *config.Error naming the variable and
// what is valid.
func TestTracingSettings(t *testing.T) {
	t.Parallel()
	const key = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // 32 bytes
	for _, c := range []struct {
		name string
		env  map[string]string
		want export.Settings
		err  string
	}{
		{"unset", nil, export.Settings{Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"endpoint: http/protobuf, the specification's default", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_SERVICE_NAME": "fleet-a"},
			export.Settings{Exporter: "otlp", Endpoint: "http://localhost:4318/v1/traces", ServiceName: "fleet-a", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			export.Settings{Exporter: "otlp", Protocol: "grpc", Endpoint: "http://localhost:4317", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"traces endpoint wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b:4317/"},
			export.Settings{Exporter: "otlp", Endpoint: "https://b:4317/", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"ratio", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_TRACES_SAMPLER": "TraceIdRatio", "OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
			export.Settings{Exporter: "otlp", Endpoint: "http://a:4317/v1/traces", Sampler: "traceidratio", SamplerArg: 0.25, CaptureContent: true}, ""},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			export.Settings{Exporter: "otlp", Protocol: "http/protobuf", Endpoint: "http://collector:4318/v1/traces", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"http/protobuf traces endpoint as it is", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector:4318/otlp/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			export.Settings{Exporter: "otlp", Protocol: "http/protobuf", Endpoint: "https://collector:4318/otlp/traces", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"otlp without endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			export.Settings{Exporter: "otlp", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "Console", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317"},
			export.Settings{Exporter: "console", Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317"},
			export.Settings{Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317"},
			export.Settings{Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"protocol alone", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			export.Settings{Sampler: "parentbased_always_on", SamplerArg: 1}, ""},
		{"exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, export.Settings{},
			`OTEL_TRACES_EXPORTER="zipkin" is not an exporter agentrun has: want otlp (the default when an endpoint is set), console (spans as JSON on standard output) or none (no tracing)`},
		{"protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, export.Settings{},
			`OTEL_EXPORTER_OTLP_PROTOCOL="http/json" is not an OTLP protocol agentrun speaks: want http/protobuf (the default, port 4318) or grpc (port 4317)`},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "yes"}, export.Settings{}, `OTEL_SDK_DISABLED="yes" is not true or false`},
		{"http query", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/?a=b", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, export.Settings{},
			`OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318/?a=b" is not an OTLP/HTTP endpoint (a query (OTLP takes none))`},
		{"no scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, export.Settings{},
			`OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318" is not an OTLP/HTTP endpoint (scheme "localhost"): want http://HOST:PORT (plain) or https://HOST:PORT (TLS), e.g. http://localhost:4318`},
		{"no port", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector"}, export.Settings{}, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://collector" is not an OTLP/HTTP endpoint (no host and port)`},
		{"a path for grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, export.Settings{}, "(a path (OTLP/gRPC takes none)): want http://HOST:PORT (plain) or https://HOST:PORT (TLS), e.g. http://localhost:4317 (or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf for OTLP over HTTP)"},
		{"bad port", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:99999"}, export.Settings{}, `(port "99999")`},
		{"sampler", map[string]string{"OTEL_TRACES_SAMPLER": "jaeger_remote"}, export.Settings{},
			`OTEL_TRACES_SAMPLER="jaeger_remote" is not a sampler agentrun knows: want one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio (default parentbased_always_on)`},
		{"ratio range", map[string]string{"OTEL_TRACES_SAMPLER_ARG": "1.5"}, export.Settings{}, `OTEL_TRACES_SAMPLER_ARG="1.5" is not a ratio: want a number from 0 to 1`},
		{"capture", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes"}, export.Settings{}, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="yes" is not true or false`},
		{"capture with codec", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true", "AGENTRUN_CODEC_KEYS": key}, export.Settings{},
			"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true with the payload codec on (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE)"},
	} {
		s, err := config.Load(func(k string) string { return c.env[k] })
		if c.err == "" {
			if err != nil || s.Tracing != c.want {
				t.Errorf("%s: %+v, %v; want %+v", c.name, s.Tracing, err, c.want)
			}
			if s.Tracing.On() != (c.want.Exporter != "") {
				t.Errorf("%s: On() = %v", c.name, s.Tracing.On())
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") || !errors.As(err, new(*config.Error)) {
			t.Errorf("%s: error %v, want a one-line *config.Error containing %q", c.name, err, c.err)
		}
	}
}
