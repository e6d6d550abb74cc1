package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/config"
)

// TestModelSettingsDefaults: the model timeout defaults to 2m, the cut
// answer flag to off, and no models file means no settings; each is read
// when set.
func TestModelSettingsDefaults(t *testing.T) {
	t.Parallel()
	s, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if s.ModelTimeout != 2*time.Minute || s.FailOnCut || !s.ModelSettings.IsZero() {
		t.Fatalf("defaults: timeout %v, fail on cut %v, settings %s; want 2m, false, none", s.ModelTimeout, s.FailOnCut, s.ModelSettings)
	}
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(`{"openai:gpt-4o-mini": {"temperature": 0.2, "seed": 7}, "scripted": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTRUN_MODEL": "openai:gpt-4o-mini", "AGENTRUN_MODEL_TIMEOUT": "90s", "AGENTRUN_FAIL_ON_CUT_ANSWER": "1", "AGENTRUN_MODELS": path}
	s, err = config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.ModelTimeout != 90*time.Second || !s.FailOnCut || s.ModelSettings.String() != "temperature=0.2 seed=7" {
		t.Fatalf("set: timeout %v, fail on cut %v, settings %s", s.ModelTimeout, s.FailOnCut, s.ModelSettings)
	}
}

// TestSessionIdleSetting: AGENTRUN_SESSION_IDLE defaults to 24h, is read
// as a Go duration, and a bad value is a one-line error naming what is
// valid.
func TestSessionIdleSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want time.Duration
		err  string
	}{
		{"", 24 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"soon", 0, `AGENTRUN_SESSION_IDLE="soon" is not a positive duration: want a Go duration such as 30m or 24h (default 24h)`},
		{"-1h", 0, "is not a positive duration"},
		{"0s", 0, "is not a positive duration"},
	} {
		s, err := config.Load(func(k string) string {
			if k == "AGENTRUN_SESSION_IDLE" {
				return c.v
			}
			return ""
		})
		switch {
		case c.err == "" && (err != nil || s.SessionIdle != c.want):
			t.Errorf("%q: %v, %v; want %v", c.v, s.SessionIdle, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q: error %v, want one line containing %q", c.v, err, c.err)
		}
	}
}

// TestLocalRetrySettings: the local engine's attempts default to 10 and
// its first wait to 1s, as on Temporal; each is read when set, and a value
// that is not positive is a one-line error naming the variable and what
// is valid.
func TestLocalRetrySettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		attempts, interval string
		want               int
		wantWait           time.Duration
		err                string
	}{
		{"", "", 10, time.Second, ""},
		{"3", "20ms", 3, 20 * time.Millisecond, ""},
		{"1", "", 1, time.Second, ""},
		{"0", "", 0, 0, `AGENTRUN_LOCAL_ATTEMPTS "0": want a positive number of attempts of a failing model or read step, e.g. 10 (1: no retry)`},
		{"-2", "", 0, 0, `AGENTRUN_LOCAL_ATTEMPTS "-2": want a positive number`},
		{"many", "", 0, 0, `AGENTRUN_LOCAL_ATTEMPTS "many": want a positive number`},
		{"", "0s", 0, 0, `AGENTRUN_LOCAL_RETRY_INTERVAL="0s" is not a positive duration: want a Go duration such as 500ms or 2s (default 1s)`},
		{"", "-1s", 0, 0, `AGENTRUN_LOCAL_RETRY_INTERVAL="-1s" is not a positive duration`},
		{"", "soon", 0, 0, `AGENTRUN_LOCAL_RETRY_INTERVAL="soon" is not a positive duration`},
	} {
		env := map[string]string{"AGENTRUN_LOCAL_ATTEMPTS": c.attempts, "AGENTRUN_LOCAL_RETRY_INTERVAL": c.interval}
		s, err := config.Load(func(k string) string { return env[k] })
		switch {
		case c.err == "" && (err != nil || s.LocalAttempts != c.want || s.LocalRetryInterval != c.wantWait):
			t.Errorf("%q %q: %d %v, %v; want %d %v", c.attempts, c.interval, s.LocalAttempts, s.LocalRetryInterval, err, c.want, c.wantWait)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q %q: error %v, want one line containing %q", c.attempts, c.interval, err, c.err)
		}
	}
}

// TestMetricsSetting: AGENTRUN_METRICS is a listen address or unset (off);
// anything else is a one-line error naming the setting and an example.
func TestMetricsSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value, want string
		ok          bool
	}{
		{"", "", true},
		{":9464", ":9464", true},
		{" 127.0.0.1:9464 ", "127.0.0.1:9464", true},
		{"[::1]:9464", "[::1]:9464", true},
		{"9464", "", false},
		{"127.0.0.1", "", false},
		{":0", "", false},
		{":99999", "", false},
		{"localhost:metrics", "", false},
		{"http://localhost:9464", "", false},
	} {
		env := map[string]string{"AGENTRUN_METRICS": tc.value}
		s, err := config.Load(func(k string) string { return env[k] })
		switch {
		case tc.ok && (err != nil || s.Metrics != tc.want):
			t.Errorf("AGENTRUN_METRICS=%q: Metrics %q, %v; want %q", tc.value, s.Metrics, err, tc.want)
		case !tc.ok && err == nil:
			t.Errorf("AGENTRUN_METRICS=%q: no error", tc.value)
		case !tc.ok && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "AGENTRUN_METRICS") || !strings.Contains(err.Error(), ":9464")):
			t.Errorf("AGENTRUN_METRICS=%q: error %q, want one line naming the setting with an example", tc.value, err)
		}
	}
}

// TestModelIdleTimeoutSetting: AGENTRUN_MODEL_IDLE_TIMEOUT defaults to 1m,
// or to AGENTRUN_MODEL_TIMEOUT when that is shorter; a value that is not
// a positive duration, or one longer than AGENTRUN_MODEL_TIMEOUT (the cap
// on the whole answer), is a one-line *config.Error naming the variable.
func TestModelIdleTimeoutSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		idle, whole     string
		wantIdle, wantW time.Duration
		err             string
	}{
		{"", "", time.Minute, 2 * time.Minute, ""},
		{"", "30s", 30 * time.Second, 30 * time.Second, ""},
		{"20s", "", 20 * time.Second, 2 * time.Minute, ""},
		{"5m", "10m", 5 * time.Minute, 10 * time.Minute, ""},
		{"2m", "", 2 * time.Minute, 2 * time.Minute, ""},
		{"3m", "", 0, 0, "AGENTRUN_MODEL_IDLE_TIMEOUT=3m0s is longer than AGENTRUN_MODEL_TIMEOUT=2m0s: want an idle timeout (each silence of a streamed answer) of at most the model timeout (the whole answer), or raise AGENTRUN_MODEL_TIMEOUT"},
		{"10s", "5s", 0, 0, "AGENTRUN_MODEL_IDLE_TIMEOUT=10s is longer than AGENTRUN_MODEL_TIMEOUT=5s"},
		{"0", "", 0, 0, `AGENTRUN_MODEL_IDLE_TIMEOUT="0" is not a positive duration: want a Go duration such as 30s or 2m (default 1m, at most AGENTRUN_MODEL_TIMEOUT)`},
		{"-1s", "", 0, 0, `AGENTRUN_MODEL_IDLE_TIMEOUT="-1s" is not a positive duration`},
		{"soon", "", 0, 0, `AGENTRUN_MODEL_IDLE_TIMEOUT="soon" is not a positive duration`},
	} {
		env := map[string]string{"AGENTRUN_MODEL_IDLE_TIMEOUT": c.idle, "AGENTRUN_MODEL_TIMEOUT": c.whole}
		s, err := config.Load(func(k string) string { return env[k] })
		if c.err != "" {
			var ce *config.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("idle %q, whole %q: error %v; want a one-line *config.Error containing %q", c.idle, c.whole, err, c.err)
			}
			continue
		}
		if err != nil || s.ModelIdleTimeout != c.wantIdle || s.ModelTimeout != c.wantW {
			t.Errorf("idle %q, whole %q: idle %v, whole %v, %v; want %v, %v", c.idle, c.whole, s.ModelIdleTimeout, s.ModelTimeout, err, c.wantIdle, c.wantW)
			continue
		}
		if o := s.ModelOptions(); o.IdleTimeout != c.wantIdle || o.Timeout != c.wantW {
			t.Errorf("idle %q, whole %q: model options carry idle %v, whole %v", c.idle, c.whole, o.IdleTimeout, o.Timeout)
		}
	}
}

// TestFailOnEmptySetting: AGENTRUN_FAIL_ON_EMPTY_ANSWER is off by default,
// on with 1, and a value that is not a boolean is a one-line *config.Error
// naming the variable.
func TestFailOnEmptySetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want bool
		err  string
	}{
		{"", false, ""},
		{"1", true, ""},
		{"0", false, ""},
		{"maybe", false, `AGENTRUN_FAIL_ON_EMPTY_ANSWER="maybe" is not a boolean: want 1 (fail runs whose final answer has no text) or 0`},
	} {
		s, err := config.Load(func(k string) string {
			if k == "AGENTRUN_FAIL_ON_EMPTY_ANSWER" {
				return c.v
			}
			return ""
		})
		var ce *config.Error
		if c.err != "" {
			if !errors.As(err, &ce) || err.Error() != c.err {
				t.Errorf("%q: error %v, want %s", c.v, err, c.err)
			}
			continue
		}
		if err != nil || s.FailOnEmpty != c.want {
			t.Errorf("%q: fail on empty %v, %v; want %v", c.v, s.FailOnEmpty, err, c.want)
		}
	}
}
