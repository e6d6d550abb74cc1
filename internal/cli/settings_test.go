package cli_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestSettingErrorsExitTwo: every setting a program cannot use exits with
// cli.ExitSettings (2) and one line naming the variable, before anything
// is dialled or written: a provider's settings (checked when the
// configuration loads), a missing key (found when the worker builds the
// model) and a test hook alike, for the worker and the starter.
func TestSettingErrorsExitTwo(t *testing.T) {
	t.Parallel()
	if cli.ExitSettings != 2 {
		t.Fatalf("ExitSettings = %d, want 2", cli.ExitSettings)
	}
	if _, err := config.Load(func(k string) string { return map[string]string{"AGENTRUN_MAX_TOKENS": "lots"}[k] }); cli.ExitCode(err) != cli.ExitSettings {
		t.Fatalf("ExitCode(%v) = %d, want %d", err, cli.ExitCode(err), cli.ExitSettings)
	}
	worker, starter := testenv.Program(t, "worker"), testenv.Program(t, "starter")
	dir := t.TempDir()
	for _, tc := range []struct {
		prog string
		env  []string
		want string
	}{
		{worker, []string{"AGENTRUN_MODEL=openai:gpt-4o-mini", "OPENAI_API_KEY=sk-test-0001", "OPENAI_BASE_URL=localhost:8000"}, "worker: AGENTRUN_MODEL: openai: OPENAI_BASE_URL"},
		{worker, []string{"AGENTRUN_MODEL=anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY=sk-test-0001", "AGENTRUN_MAX_TOKENS=lots"}, `worker: AGENTRUN_MAX_TOKENS is "lots"`},
		{worker, []string{"AGENTRUN_MODEL=anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY="}, "worker: AGENTRUN_MODEL: anthropic: no API key: set ANTHROPIC_API_KEY"},
		{worker, []string{"AGENTRUN_TEST_HOLD_FOR=soon"}, `worker: AGENTRUN_TEST_HOLD_FOR="soon"`},
		{starter, []string{"AGENTRUN_MODEL=gemini:pro"}, `starter: AGENTRUN_MODEL: unknown model "gemini:pro"`},
	} {
		env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_MODEL=scripted",
			"TEMPORAL_ADDRESS=127.0.0.1:1") // never reached
		env = append(env, tc.env...)
		args := []string{}
		if tc.prog == starter {
			args = []string{"--local", "--id", "r1", "hello"}
		}
		code, out := testenv.Run(t, env, time.Minute, tc.prog, args...)
		out = strings.TrimSpace(out)
		if code != cli.ExitSettings || strings.Contains(out, "\n") || !strings.HasPrefix(out, tc.want) || strings.Contains(out, "sk-test") {
			t.Errorf("%s with %v: exit %d, %q; want exit 2 and one line starting %q", filepath.Base(tc.prog), tc.env, code, out, tc.want)
		}
	}
}

// TestKeyFileModeExitsTwo: a key file that group or others may read stops
// every program at start with exit 2 and one line naming the setting, the
// file and its mode: the codec's key file for the worker, the starter,
// reconcile and the codec server, the TLS client key for the programs that
// dial Temporal.
func TestKeyFileModeExitsTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := filepath.Join(dir, "codec.keys")
	if err := os.WriteFile(keys, []byte("k1:"+base64.StdEncoding.EncodeToString(make([]byte, 32))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tlsKey, tlsCert := filepath.Join(dir, "client.key"), filepath.Join(dir, "client.pem")
	for _, f := range []string{tlsKey, tlsCert} {
		if err := os.WriteFile(f, []byte("not read\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	codecWant := "AGENTRUN_CODEC_KEY_FILE " + keys + ": mode 0644 lets group or others read it; chmod 600 it"
	tlsWant := "TEMPORAL_TLS_CLIENT_KEY_PATH (or the profile's tls.client_key_path) " + tlsKey + ": mode 0640 lets group or others read it; chmod 600 it"
	codecEnv := []string{"AGENTRUN_CODEC_KEY_FILE=" + keys}
	tlsEnv := []string{"TEMPORAL_TLS_CLIENT_KEY_PATH=" + tlsKey, "TEMPORAL_TLS_CLIENT_CERT_PATH=" + tlsCert}
	for _, tc := range []struct {
		prog string
		args []string
		env  []string
		want string
	}{
		{"worker", nil, codecEnv, codecWant},
		{"starter", []string{"--id", "r1", "hello"}, codecEnv, codecWant},
		{"reconcile", []string{"show", "r1"}, codecEnv, codecWant},
		{"codecserver", nil, codecEnv, codecWant},
		{"worker", nil, tlsEnv, tlsWant},
		{"starter", []string{"--id", "r1", "hello"}, tlsEnv, tlsWant},
		{"reconcile", []string{"show", "r1"}, tlsEnv, tlsWant},
	} {
		env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_MODEL=scripted",
			"AGENTRUN_CODEC_KEYS=", "AGENTRUN_CODEC_KEY_FILE=", "TEMPORAL_CONFIG_FILE="+filepath.Join(dir, "none.toml"),
			"AGENTRUN_CODEC_ADDR=127.0.0.1:0", "TEMPORAL_ADDRESS=127.0.0.1:1") // never reached
		env = append(env, tc.env...)
		code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, tc.prog), tc.args...)
		out = strings.TrimSpace(out)
		if want := tc.prog + ": " + tc.want; code != cli.ExitSettings || out != want {
			t.Errorf("%s with %v: exit %d, %q; want exit 2 and the line %q", tc.prog, tc.env, code, out, want)
		}
	}
}
