package config

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrun/agentrun/plumbing/tracing/export"
)

// parseTracing reads the tracing settings, OpenTelemetry's standard
// variables: off (no exporter, no endpoint) when OTEL_TRACES_EXPORTER is
// unset and no endpoint variable is set, when it is "none", and when
// OTEL_SDK_DISABLED is true.
func parseTracing(e env) (export.Settings, error) {
	s := export.Settings{ServiceName: strings.TrimSpace(e.get("OTEL_SERVICE_NAME")), SamplerArg: 1}
	disabled := false
	switch v := strings.ToLower(strings.TrimSpace(e.get("OTEL_SDK_DISABLED"))); v {
	case "", "false":
	case "true":
		disabled = true
	default:
		return s, fmt.Errorf("OTEL_SDK_DISABLED=%q is not true or false: want true (no tracing) or false (the default)", v)
	}
	exporter := strings.ToLower(strings.TrimSpace(e.get("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "", export.ExporterOTLP, export.ExporterConsole, export.ExporterNone:
	default:
		return s, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not an exporter agentrun has: want otlp (the default when an endpoint is set), console (spans as JSON on standard output) or none (no tracing)", exporter)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v := strings.ToLower(strings.TrimSpace(e.get(name)))
		if v == "" {
			continue
		}
		if v != export.ProtocolGRPC && v != export.ProtocolHTTP {
			return s, fmt.Errorf("%s=%q is not an OTLP protocol agentrun speaks: want http/protobuf (the default, port 4318) or grpc (port 4317)", name, v)
		}
		if s.Protocol == "" {
			s.Protocol = v // the traces protocol wins
		}
	}
	proto := cmp.Or(s.Protocol, export.ProtocolHTTP) // the specification's default
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		v := strings.TrimSpace(e.get(name))
		if v == "" {
			continue
		}
		if err := export.CheckEndpoint(v, proto); err != nil {
			if proto == export.ProtocolHTTP {
				return s, fmt.Errorf("%s=%q is not an OTLP/HTTP endpoint (%v): want http://HOST:PORT (plain) or https://HOST:PORT (TLS), e.g. http://localhost:4318", name, v, err)
			}
			return s, fmt.Errorf("%s=%q is not an OTLP/gRPC endpoint (%v): want http://HOST:PORT (plain) or https://HOST:PORT (TLS), e.g. http://localhost:4317 (or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf for OTLP over HTTP)", name, v, err)
		}
		if s.Endpoint != "" {
			continue // the traces endpoint wins
		}
		s.Endpoint = v
		if name == "OTEL_EXPORTER_OTLP_ENDPOINT" && proto == export.ProtocolHTTP {
			// The signal's path, as the specification says for the
			// general variable.
			s.Endpoint = strings.TrimRight(v, "/") + "/v1/traces"
		}
	}
	switch {
	case disabled || exporter == export.ExporterNone:
	case exporter == export.ExporterConsole:
		s.Exporter, s.Protocol, s.Endpoint = export.ExporterConsole, "", ""
	case exporter == export.ExporterOTLP || s.Endpoint != "":
		s.Exporter = export.ExporterOTLP
	}
	if s.Exporter == "" {
		s.Protocol, s.Endpoint = "", "" // off
	}
	s.Sampler = strings.ToLower(strings.TrimSpace(e.get("OTEL_TRACES_SAMPLER")))
	if s.Sampler == "" {
		s.Sampler = export.DefaultSampler
	}
	if !export.ValidSampler(s.Sampler) {
		return s, fmt.Errorf("OTEL_TRACES_SAMPLER=%q is not a sampler agentrun knows: want one of %s (default %s)", s.Sampler, strings.Join(export.Samplers, ", "), export.DefaultSampler)
	}
	if v := strings.TrimSpace(e.get("OTEL_TRACES_SAMPLER_ARG")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return s, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q is not a ratio: want a number from 0 to 1, e.g. 0.25, the share of runs traced by traceidratio samplers (default 1)", v)
		}
		s.SamplerArg = f
	}
	switch v := strings.ToLower(strings.TrimSpace(e.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))); v {
	case "", "false":
	case "true":
		s.CaptureContent = true
	default:
		return s, fmt.Errorf("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=%q is not true or false: want true (spans carry prompts, completions and tool text) or false (the default)", v)
	}
	return s, nil
}

// errCaptureWithCodec refuses content capture with the codec on: the codec
// keeps the text from Temporal, a trace backend must not get it either.
var errCaptureWithCodec = errors.New("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true with the payload codec on (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE): text the codec encrypts would reach the trace backend in clear; unset the capture (or the codec)")
