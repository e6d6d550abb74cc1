package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
	"github.com/agentrun/agentrun/tools"
)

func load(env map[string]string) (config.Config, error) {
	return config.Load(func(k string) string { return env[k] })
}

// TestLoadReadsEachNameOnce: Load asks getenv for each of Names once and
// for nothing else, whatever the values: Names is the whole list.
func TestLoadReadsEachNameOnce(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		nil,
		{"AGENTRUN_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": "sk-test-1", "AGENTRUN_DEPLOYMENT": "agentrun", "AGENTRUN_BUILD_ID": "v1"},
		{"AGENTRUN_MAX_TURNS": "many"}, // refused: still each name once
	} {
		asked := map[string]int{}
		config.Load(func(k string) string { asked[k]++; return env[k] })
		for _, name := range config.Names {
			if asked[name] != 1 {
				t.Errorf("%v: %s asked %d times, want once", env, name, asked[name])
			}
		}
		for name := range asked {
			if !slices.Contains(config.Names, name) {
				t.Errorf("%v: Load asked for %s, which Names does not list", env, name)
			}
		}
	}
}

// TestDefaults: with nothing set, every field has the default its comment
// gives.
func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		TaskQueue: "agentrun", UI: "http://localhost:8233", Journal: ".agentrun/journal", Model: "scripted",
		ModelTimeout: 2 * time.Minute, ModelIdleTimeout: time.Minute, MaxTurns: 25, SessionIdle: 24 * time.Hour, StopTimeout: 10 * time.Second,
		Demo:        tools.DemoConfig{Tickets: ".agentrun/tickets.jsonl"},
		CodecServer: config.CodecServer{Addr: "127.0.0.1:8234", Origins: []string{"http://localhost:8233"}},
	}
	want.LocalAttempts, want.LocalRetryInterval = 10, time.Second                 // the local engine's retries, as on Temporal
	want.Tracing = export.Settings{Sampler: export.DefaultSampler, SamplerArg: 1} // off: no endpoint
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c, _ := load(map[string]string{"AGENTRUN_STOP_TIMEOUT": "0s"}); c.StopTimeout != 0 {
		t.Errorf("AGENTRUN_STOP_TIMEOUT=0s: %v, want 0 (let no step finish), not the default", c.StopTimeout)
	}
	if c, _ := load(map[string]string{"AGENTRUN_MODEL": "anthropic:claude-sonnet-4-5"}); c.ContextBudget != 200_000 {
		t.Errorf("anthropic: context budget %d, want 200000", c.ContextBudget)
	}
}

// TestProviderSettings: the provider's account settings are read and
// checked at load, each refusal one line naming the variable; a missing
// key is not (programs that never call the model run without it).
func TestProviderSettings(t *testing.T) {
	t.Parallel()
	const key = "sk-test-secret-0001"
	for _, tc := range []struct {
		env  map[string]string
		want string // "" for no error
	}{
		{map[string]string{"AGENTRUN_MODEL": "openai:gpt-4o-mini"}, ""},
		{map[string]string{"AGENTRUN_MODEL": "anthropic:claude-sonnet-4-5"}, ""},
		{map[string]string{"AGENTRUN_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": key, "AGENTRUN_MAX_TOKENS": "lots"}, `AGENTRUN_MAX_TOKENS is "lots": want a positive whole number of tokens`},
		{map[string]string{"AGENTRUN_MODEL": "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY": key, "AGENTRUN_MAX_TOKENS": "-1"}, "AGENTRUN_MAX_TOKENS"},
		{map[string]string{"AGENTRUN_MODEL": "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY": key, "AGENTRUN_MAX_TOKENS": "100000"}, "AGENTRUN_MODEL: anthropic: max tokens 100000 is too many"},
		{map[string]string{"AGENTRUN_MODEL": "openai:gpt-4o-mini", "OPENAI_BASE_URL": "localhost:8000"}, "AGENTRUN_MODEL: openai: OPENAI_BASE_URL"},
		{map[string]string{"AGENTRUN_MODEL": "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "ftp://x"}, "AGENTRUN_MODEL: anthropic: ANTHROPIC_BASE_URL"},
		{map[string]string{"AGENTRUN_MODEL": "gemini:pro"}, `AGENTRUN_MODEL: unknown model "gemini:pro"`},
		{map[string]string{"AGENTRUN_MODEL": "openai:"}, `AGENTRUN_MODEL: model "openai:" names no model`},
		{map[string]string{"AGENTRUN_MODEL": "scripted:" + filepath.Join(t.TempDir(), "missing.json")}, "AGENTRUN_MODEL: "},
	} {
		c, err := load(tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%v: error %v, want one line starting %q", tc.env, err, tc.want)
		case err != nil && !errors.As(err, new(*config.Error)):
			t.Errorf("%v: error %T, want a *config.Error", tc.env, err)
		case err != nil && strings.Contains(err.Error(), key):
			t.Errorf("%v: error %q shows the key", tc.env, err)
		}
		if tc.want == "" && c.Model != tc.env["AGENTRUN_MODEL"] {
			t.Errorf("%v: model %q", tc.env, c.Model)
		}
	}
	env := map[string]string{"AGENTRUN_MODEL": "openai:local", "OPENAI_API_KEY": key, "OPENAI_BASE_URL": "http://localhost:11434/v1",
		"OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj-1", "ANTHROPIC_API_KEY": key + "-a", "ANTHROPIC_BASE_URL": "http://localhost:9999", "AGENTRUN_MAX_TOKENS": "512"}
	c, err := load(env)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Account{OpenAIAPIKey: key, OpenAIBaseURL: "http://localhost:11434/v1", OpenAIOrganization: "org-1", OpenAIProject: "proj-1",
		AnthropicAPIKey: key + "-a", AnthropicBaseURL: "http://localhost:9999", MaxTokens: 512}
	if c.Account != want {
		t.Errorf("account %v, want %v", c.Account, want)
	}
	if o := c.ModelOptions(); o.Account != want || o.Timeout != 2*time.Minute {
		t.Errorf("model options %+v", o)
	}
}

// TestTestHooks: the Test section is read like every setting: unset is
// off, and a value it cannot use is refused in one line.
func TestTestHooks(t *testing.T) {
	t.Parallel()
	c, err := load(map[string]string{"AGENTRUN_TEST_HOLD_BEFORE": "create_ticket", "AGENTRUN_TEST_HOLD_AFTER": "tool/5/0/create_ticket",
		"AGENTRUN_TEST_HOLD_FOR": "45s", "AGENTRUN_TEST_HOLD_LIST": "1", "AGENTRUN_TEST_WORKFLOW_CHANGE": "1"})
	if err != nil {
		t.Fatal(err)
	}
	want := testhook.Hooks{HoldBefore: "create_ticket", HoldAfter: "tool/5/0/create_ticket", HoldFor: 45 * time.Second, HoldList: true, WorkflowChange: true}
	if c.Test != want {
		t.Errorf("test hooks %+v, want %+v", c.Test, want)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"AGENTRUN_TEST_HOLD_FOR", "soon", `AGENTRUN_TEST_HOLD_FOR="soon" is not a positive duration`},
		{"AGENTRUN_TEST_HOLD_FOR", "0s", `AGENTRUN_TEST_HOLD_FOR="0s" is not a positive duration`},
		{"AGENTRUN_TEST_HOLD_LIST", "yes", `AGENTRUN_TEST_HOLD_LIST="yes" is not 1 or 0`},
		{"AGENTRUN_TEST_WORKFLOW_CHANGE", "true", `AGENTRUN_TEST_WORKFLOW_CHANGE="true" is not 1 or 0`},
	} {
		if _, err := load(map[string]string{tc.name: tc.value}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestToolsSettings: AGENTRUN_TOOLS loads and checks the tools file (unset:
// the zero tools.Config, the demo tools alone), AGENTRUN_APPROVAL_TIMEOUT
// goes into it, and the demo tools' variables are read.
func TestToolsSettings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(`{"demo": {"create_ticket": false}, "servers": null}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(map[string]string{"AGENTRUN_TOOLS": path, "AGENTRUN_APPROVAL_TIMEOUT": "30m", "AGENTRUN_TICKETS": "/tmp/t.jsonl", "AGENTRUN_DEMO_DELAY": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (tools.Config{Path: path, Demo: map[string]bool{"create_ticket": false}, ApprovalTimeout: 30 * time.Minute}); !reflect.DeepEqual(c.Tools, want) {
		t.Errorf("tools %+v, want %+v", c.Tools, want)
	}
	if want := (tools.DemoConfig{Tickets: "/tmp/t.jsonl", Delay: 2 * time.Second}); c.Demo != want {
		t.Errorf("demo %+v, want %+v", c.Demo, want)
	}
	for env, want := range map[string]string{
		"AGENTRUN_DEMO_DELAY=-1s":             `AGENTRUN_DEMO_DELAY="-1s" is not a duration`,
		"AGENTRUN_APPROVAL_TIMEOUT=soon":      `AGENTRUN_APPROVAL_TIMEOUT="soon" is not a positive duration`,
		"AGENTRUN_TOOLS=" + path + ".missing": "AGENTRUN_TOOLS: tools config: open " + path + ".missing",
	} {
		k, v, _ := strings.Cut(env, "=")
		if _, err := load(map[string]string{k: v}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", env, err, want)
		}
	}
}

// TestStickyCache: AGENTRUN_STICKY_CACHE_SIZE is a positive integer; a
// bad one is one line naming it.
func TestStickyCache(t *testing.T) {
	t.Parallel()
	if c, err := load(map[string]string{"AGENTRUN_STICKY_CACHE_SIZE": " 2000 "}); err != nil || c.StickyCache != 2000 {
		t.Fatalf("2000: %d, %v", c.StickyCache, err)
	}
	for _, v := range []string{"0", "-5", "lots"} {
		_, err := load(map[string]string{"AGENTRUN_STICKY_CACHE_SIZE": v})
		if err == nil || !strings.HasPrefix(err.Error(), `AGENTRUN_STICKY_CACHE_SIZE="`+v+`" is not a positive integer`) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// TestGRPCCompression: AGENTRUN_GRPC_COMPRESSION is gzip (the sdk's
// default, left nil) or none; anything else is one line naming both.
func TestGRPCCompression(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "gzip", " GZIP "} {
		if c, err := load(map[string]string{"AGENTRUN_GRPC_COMPRESSION": v}); err != nil || c.GRPCCompression != nil {
			t.Errorf("%q: %T, %v; want nil (the sdk's gzip)", v, c.GRPCCompression, err)
		}
	}
	for _, v := range []string{"none", " None "} {
		if c, err := load(map[string]string{"AGENTRUN_GRPC_COMPRESSION": v}); err != nil {
			t.Errorf("%q: %v", v, err)
		} else if _, ok := c.GRPCCompression.(*client.GrpcCompressionNone); !ok {
			t.Errorf("%q: %T, want *client.GrpcCompressionNone", v, c.GRPCCompression)
		}
	}
	for _, v := range []string{"zstd", "off", "0"} {
		_, err := load(map[string]string{"AGENTRUN_GRPC_COMPRESSION": v})
		want := `AGENTRUN_GRPC_COMPRESSION="` + v + `" is not gzip or none: want none (`
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "or gzip (the default") || strings.Contains(err.Error(), "\n") || !errors.As(err, new(*config.Error)) {
			t.Errorf("%q: %v; want the *config.Error %q...", v, err, want)
		}
	}
}
