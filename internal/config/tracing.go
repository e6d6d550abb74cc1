package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrun/agentrun/internal/tracing"
)

// parseTracing reads the tracing settings: off (zero) when neither
// endpoint variable is set.
func parseTracing(e env) (tracing.Settings, error) {
	s := tracing.Settings{ServiceName: strings.TrimSpace(e.get("OTEL_SERVICE_NAME")), SamplerArg: 1}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		v := strings.TrimSpace(e.get(name))
		if v == "" {
			continue
		}
		if err := tracing.CheckEndpoint(v); err != nil {
			return s, fmt.Errorf("%s=%q is not an OTLP/gRPC endpoint (%v): want http://HOST:PORT (plain) or https://HOST:PORT (TLS), e.g. http://localhost:4317", name, v, err)
		}
		if s.Endpoint == "" {
			s.Endpoint = v // the traces endpoint wins
		}
	}
	s.Sampler = strings.ToLower(strings.TrimSpace(e.get("OTEL_TRACES_SAMPLER")))
	if s.Sampler == "" {
		s.Sampler = tracing.DefaultSampler
	}
	if !tracing.ValidSampler(s.Sampler) {
		return s, fmt.Errorf("OTEL_TRACES_SAMPLER=%q is not a sampler agentrun knows: want one of %s (default %s)", s.Sampler, strings.Join(tracing.Samplers, ", "), tracing.DefaultSampler)
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
