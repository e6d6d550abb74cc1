package llm

import (
	"github.com/agentrun/agentrun/llm/internal/safetext"

	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/ratelimit"
)

// Options are a provider's settings.
type Options struct {
	// Account is the provider's key, address and reply cap. Default: the
	// zero Account.
	Account Account
	// Timeout bounds one model request: the whole exchange, from sending
	// it to reading the whole answer, streamed or not. Expiry is a
	// ClassTimeout error, which the engine retries. Default 0:
	// DefaultTimeout (2m).
	Timeout time.Duration
	// IdleTimeout bounds each silence of a streamed answer: from sending
	// the request to its first piece, and between two pieces. Expiry is a
	// ClassTimeout error too. A request answered whole has Timeout alone.
	// Default 0: DefaultIdleTimeout (1m), at most Timeout.
	IdleTimeout time.Duration
	// Settings are the model's request settings, from the models file.
	// Default: none (each server's defaults apply).
	Settings agent.ModelSettings
	// Limiter paces the calls under the settings' Limits, shared with
	// every worker that reaches its store. Default nil: the limits are
	// checked but not applied (a tool that only reads settings).
	Limiter *ratelimit.Limiter
}

// SettingKeys are the keys of one model's settings in the models file.
var SettingKeys = []string{"temperature", "top_p", "seed", "max_tokens", "reasoning_effort", "extra", "price", "limits"}

// Reasoning efforts each provider accepts, as its SDK lists them.
var (
	openAIEfforts    = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}
	anthropicEfforts = []string{"low", "medium", "high", "xhigh", "max"}
)

// Request fields that agentrun or a named setting sets; extra may not
// name them.
var (
	openAIReserved    = []string{"model", "messages", "tools", "stream", "temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort"}
	anthropicReserved = []string{"model", "messages", "tools", "system", "stream", "temperature", "top_p", "max_tokens", "output_config"}
)

// LoadModels reads the models file: a JSON object mapping a model, as
// AGENTRUN_MODEL names it, to its settings, e.g.
//
//	{"openai:gpt-4o-mini": {"temperature": 0.2, "seed": 7, "max_tokens": 1024}}
//
// Every error is one line naming the file, the model, the key and what is
// valid.
func LoadModels(path string) (map[string]agent.ModelSettings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models file: %w", err)
	}
	return ParseModels(path, b)
}

// ParseModels decodes and checks the models file's content; name names it
// in errors.
func ParseModels(name string, b []byte) (map[string]agent.ModelSettings, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return nil, fmt.Errorf(`%s: not a JSON object of models (%v); want e.g. {"openai:gpt-4o-mini": {"temperature": 0.2}}`, name, errOr(err, "null"))
	}
	out := map[string]agent.ModelSettings{}
	for _, spec := range sortedKeys(top) {
		kind, model, _ := strings.Cut(spec, ":")
		if (kind != "openai" && kind != "anthropic" && kind != "scripted") || (kind != "scripted" && strings.TrimSpace(model) == "") {
			return nil, fmt.Errorf("%s: %q is not a model: want %s", name, spec, ModelFormat)
		}
		s, err := parseSettings(kind, top[spec])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", name, spec, err)
		}
		out[spec] = s
	}
	if err := checkPools(out); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// checkPools checks that the models that share a rate-limit pool declare
// the same limits: one account has one set.
func checkPools(models map[string]agent.ModelSettings) error {
	first := map[string]string{} // pool: the first model that names it
	for _, spec := range sortedKeys(models) {
		l := models[spec].Limits
		if l == nil {
			continue
		}
		other, ok := first[l.Pool]
		if !ok {
			first[l.Pool] = spec
			continue
		}
		if o := models[other].Limits; *o != *l {
			return fmt.Errorf("%q and %q share the rate-limit pool %q with different limits (%s; %s): give them the same limits, or each its own \"pool\"", other, spec, l.Pool, ratelimit.Limit(*o), ratelimit.Limit(*l))
		}
	}
	return nil
}

// parseSettings decodes one model's settings and checks them for kind.
func parseSettings(kind string, raw json.RawMessage) (agent.ModelSettings, error) {
	var s agent.ModelSettings
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return s, fmt.Errorf("%s is not an object; want an object with the keys %s", short(raw), strings.Join(SettingKeys, ", "))
	}
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		var err error
		switch k {
		case "temperature":
			s.Temperature = new(float64)
			err = decodeAs(v, s.Temperature, "a number such as 0.2")
		case "top_p":
			s.TopP = new(float64)
			err = decodeAs(v, s.TopP, "a number from 0 to 1 such as 0.9")
		case "seed":
			s.Seed = new(int64)
			err = decodeAs(v, s.Seed, "a whole number such as 7")
		case "max_tokens":
			err = decodeAs(v, &s.MaxTokens, "a positive whole number of tokens such as 1024")
		case "reasoning_effort":
			err = decodeAs(v, &s.ReasoningEffort, "a string such as \"low\"")
		case "extra":
			if json.Unmarshal(v, &s.Extra) != nil || s.Extra == nil {
				err = fmt.Errorf("%s is not an object; want an object of request fields, e.g. {\"top_k\": 40}", short(v))
			}
		case "price":
			s.Price, err = parsePrice(v)
		case "limits":
			s.Limits, err = parseLimits(kind, v)
		default:
			return s, fmt.Errorf("%s: unknown setting; valid: %s", k, strings.Join(SettingKeys, ", "))
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", k, err)
		}
	}
	if err := CheckSettings(kind, s); err != nil {
		return s, err
	}
	return s, nil
}

// CheckSettings checks model settings for a provider kind ("openai",
// "anthropic" or "scripted", which takes what openai takes and sends
// nothing). The error names the key and what is valid.
func CheckSettings(kind string, s agent.ModelSettings) error {
	maxTemp, efforts, reserved := 2.0, openAIEfforts, openAIReserved
	if kind == "anthropic" {
		maxTemp, efforts, reserved = 1.0, anthropicEfforts, anthropicReserved
	}
	switch {
	case s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > maxTemp):
		return fmt.Errorf("temperature: %v is out of range; want a number from 0 to %v for %s", *s.Temperature, maxTemp, kind)
	case s.TopP != nil && (*s.TopP < 0 || *s.TopP > 1):
		return fmt.Errorf("top_p: %v is out of range; want a number from 0 to 1", *s.TopP)
	case s.Seed != nil && kind == "anthropic":
		return fmt.Errorf("seed: anthropic takes no seed; valid for anthropic: temperature, top_p, max_tokens, reasoning_effort, extra")
	case s.MaxTokens < 0:
		return fmt.Errorf("max_tokens: %d is not positive; want a positive whole number of tokens such as 1024", s.MaxTokens)
	case s.ReasoningEffort != "" && !slices.Contains(efforts, s.ReasoningEffort):
		return fmt.Errorf("reasoning_effort: %q is not an effort %s takes; want one of %s", s.ReasoningEffort, kind, strings.Join(efforts, ", "))
	}
	if _, ok := s.Extra[""]; ok {
		return fmt.Errorf("extra: an empty field name; want request fields by name, e.g. {\"top_k\": 40}")
	}
	for _, k := range sortedKeys(s.Extra) {
		if slices.Contains(reserved, k) {
			return fmt.Errorf("extra.%s: agentrun or a named setting sets it; use the named setting (%s) or another field", k, strings.Join(SettingKeys[:5], ", "))
		}
		if !json.Valid(s.Extra[k]) {
			return fmt.Errorf("extra.%s: not a JSON value", k)
		}
	}
	return nil
}

// SentSettings is the settings a reply records, nil for none: s without
// what is not a request setting (price, limits).
func SentSettings(s agent.ModelSettings) *agent.ModelSettings {
	s.Price, s.Limits = nil, nil // no request settings
	if s.IsZero() {
		return nil
	}
	return &s
}

// decodeAs decodes v into dst, strictly (a string is not a number).
func decodeAs(v json.RawMessage, dst any, want string) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	if err := dec.Decode(dst); err != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return fmt.Errorf("%s is not valid here; want %s", short(v), want)
	}
	return nil
}

func short(v json.RawMessage) string {
	s := strings.Join(strings.Fields(string(v)), " ")
	if len(s) > 60 {
		s = safetext.Truncate(s, 60)
	}
	return s
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// PriceFormat says what a price in the models file looks like.
const PriceFormat = `{"input": 2.5, "output": 10, "cache_read": 1.25, "cache_write": 3.125} (US dollars per million tokens; input and output required, the cache prices default to input)`

// parsePrice decodes a model's price: an object of non-negative numbers,
// input and output required.
func parsePrice(raw json.RawMessage) (*agent.Price, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%s is not an object; want %s", short(raw), PriceFormat)
	}
	p := &agent.Price{}
	for _, k := range sortedKeys(fields) {
		var dst *float64
		switch k {
		case "input":
			dst = &p.Input
		case "output":
			dst = &p.Output
		case "cache_read":
			dst = &p.CacheRead
		case "cache_write":
			dst = &p.CacheWrite
		default:
			return nil, fmt.Errorf("%s: unknown price; valid: input, output, cache_read, cache_write (%s)", k, PriceFormat)
		}
		if err := decodeAs(fields[k], dst, "a number of US dollars per million tokens, 0 or more"); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if *dst < 0 {
			return nil, fmt.Errorf("%s: %v is negative; want a number of US dollars per million tokens, 0 or more", k, *dst)
		}
	}
	for _, k := range []string{"input", "output"} {
		if _, ok := fields[k]; !ok {
			return nil, fmt.Errorf("%s: missing; want %s", k, PriceFormat)
		}
	}
	return p, nil
}

// LimitsFormat says what a model's "limits" may be, for errors.
const LimitsFormat = `an object such as {"requests_per_minute": 60, "tokens_per_minute": 40000}, with either or both, and "pool" to share them under another name than the provider's`

// parseLimits decodes a model's rate limits: positive whole numbers of
// requests and tokens per minute, at least one of them, and the pool they
// belong to (default: the provider kind).
func parseLimits(kind string, raw json.RawMessage) (*agent.RateLimits, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%s is not an object; want %s", short(raw), LimitsFormat)
	}
	l := &agent.RateLimits{Pool: kind}
	for _, k := range sortedKeys(fields) {
		var dst *int64
		var unit string
		switch k {
		case "requests_per_minute":
			dst, unit = &l.RequestsPerMinute, "requests per minute such as 60"
		case "tokens_per_minute":
			dst, unit = &l.TokensPerMinute, "tokens per minute such as 40000"
		case "pool":
			if err := decodeAs(fields[k], &l.Pool, "a name such as \"openai-main\""); err != nil {
				return nil, fmt.Errorf("pool: %w", err)
			}
			if err := ratelimit.CheckPool(l.Pool); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, fmt.Errorf("%s: unknown limit; valid: requests_per_minute, tokens_per_minute, pool", k)
		}
		if err := decodeAs(fields[k], dst, "a positive whole number of "+unit); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if *dst <= 0 {
			return nil, fmt.Errorf("%s: %d is not positive; want a positive whole number of %s (leave it out for no limit)", k, *dst, unit)
		}
	}
	if l.RequestsPerMinute == 0 && l.TokensPerMinute == 0 {
		return nil, fmt.Errorf("neither requests_per_minute nor tokens_per_minute is set; want %s", LimitsFormat)
	}
	return l, nil
}
