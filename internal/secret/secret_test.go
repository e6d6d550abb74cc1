package secret_test

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	"github.com/agentrun/agentrun/internal/secret"
)

func TestScrub(t *testing.T) {
	t.Parallel()
	s := secret.New("sk-live-0123456789", "p@ss word/1", "short", "sk-live-0123456789-longer")
	for _, tc := range []struct{ in, want string }{
		{"key sk-live-0123456789 here", "key [redacted] here"},
		{"longer sk-live-0123456789-longer", "longer [redacted]"},
		{"url postgres://u:p%40ss+word%2F1@h/db", "url postgres://u:[redacted]@h/db"},
		{"path p@ss%20word%2F1", "path [redacted]"},
		{`json {"k":"p@ss word/1"}`, `json {"k":"[redacted]"}`},
		{"a short value stays", "a short value stays"},
		{"", ""},
	} {
		if got := s.Scrub(tc.in); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var zero secret.Scrubber
	if got := zero.Scrub("sk-live-0123456789"); got != "sk-live-0123456789" {
		t.Errorf("the zero scrubber changed text: %q", got)
	}
}

func TestErrKeepsChain(t *testing.T) {
	t.Parallel()
	s := secret.New("sk-live-0123456789")
	err := s.Err(fmt.Errorf("open sk-live-0123456789: %w", fs.ErrNotExist))
	if err.Error() != "open [redacted]: file does not exist" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Err = %q (is ErrNotExist: %v)", err, errors.Is(err, fs.ErrNotExist))
	}
	plain := errors.New("nothing secret")
	if s.Err(plain) != plain || s.Err(nil) != nil {
		t.Fatal("Err changed an error without secrets, or nil")
	}
}

func TestFromEnviron(t *testing.T) {
	t.Parallel()
	got := secret.FromEnviron([]string{
		"OPENAI_API_KEY=sk-openai-1", "ANTHROPIC_API_KEY=sk-ant-2", "TEMPORAL_API_KEY=tmprl-3",
		"GITHUB_TOKEN=ghp-4", "AWS_SECRET_ACCESS_KEY=aws-5", "TEMPORAL_TLS_CLIENT_KEY_PATH=/etc/key.pem",
		"AGENTRUN_JOURNAL=postgres://agent:pg-pass-6@db/agentrun?sslmode=disable",
		"PATH=/usr/bin", "HOME=/root", "EMPTY_TOKEN=",
	})
	want := []string{"sk-openai-1", "sk-ant-2", "tmprl-3", "ghp-4", "aws-5", "pg-pass-6"}
	if !slices.Equal(got, want) {
		t.Fatalf("FromEnviron = %q, want %q", got, want)
	}
}
