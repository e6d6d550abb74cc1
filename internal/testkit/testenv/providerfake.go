package testenv

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"
)

// ProviderFakePkg is the provider fake's program, for Program and Build.
const ProviderFakePkg = "internal/testkit/providerfake/cmd/providerfake"

// ProviderFakeReadyTimeout bounds the fake's start: it listens at once.
const ProviderFakeReadyTimeout = 10 * time.Second

var fakeAddr = regexp.MustCompile(`providerfake listening on (http://\S+)`)

// LaunchProviderFake starts the provider fake built at path with args
// (its flags: -rpm, -tpm, -turns, ...; it listens on a free port unless
// -addr says otherwise) and waits until it listens. It returns the process
// and the fake's root URL, e.g. "http://127.0.0.1:40123": OpenAI's
// base URL is it plus "/v1", Anthropic's is it.
func LaunchProviderFake(ctx context.Context, path string, args ...string) (*Proc, string, error) {
	p, err := Launch("", nil, 1<<16, path, args...)
	if err != nil {
		return nil, "", err
	}
	if err := p.WaitLogged(ctx, "providerfake listening on ", ProviderFakeReadyTimeout); err != nil {
		p.Stop(0)
		return nil, "", fmt.Errorf("providerfake: %w", err)
	}
	m := fakeAddr.FindStringSubmatch(p.Output())
	if m == nil {
		p.Stop(0)
		return nil, "", fmt.Errorf("providerfake: no address in %q", p.Tail())
	}
	return p, m[1], nil
}

// ProviderFake builds the provider fake once per test process, starts it
// with args, and returns its process and root URL; the test stops it at
// cleanup.
func ProviderFake(t testing.TB, args ...string) (*Proc, string) {
	t.Helper()
	p, url, err := LaunchProviderFake(context.Background(), Program(t, ProviderFakePkg), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	return p, url
}

// ProviderFakeEnv returns the settings that point a worker at the fake
// root for provider "openai" or "anthropic" with model: AGENTRUN_MODEL, the
// base URL and a key (the fake takes any).
func ProviderFakeEnv(root, provider, model string) []string {
	if provider == "anthropic" {
		return []string{"AGENTRUN_MODEL=anthropic:" + model, "ANTHROPIC_BASE_URL=" + root, "ANTHROPIC_API_KEY=sk-ant-providerfake"}
	}
	return []string{"AGENTRUN_MODEL=openai:" + model, "OPENAI_BASE_URL=" + root + "/v1", "OPENAI_API_KEY=sk-providerfake"}
}
