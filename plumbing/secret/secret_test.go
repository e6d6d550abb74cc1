package secret_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/plumbing/secret"
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

// TestScrubEncodings: a secret is found in each common encoding of it, alone
// and inside longer text; inside a longer base64 value at each of the three
// offsets within a group of three bytes.
func TestScrubEncodings(t *testing.T) {
	t.Parallel()
	const v = `s3cr3t/Key+<&>"'é=?`
	s := secret.New(v)
	var goJSON, noHTML strings.Builder
	json.NewEncoder(&goJSON).Encode(map[string]string{"k": v})
	enc := json.NewEncoder(&noHTML)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]string{"k": v})
	for _, tc := range []struct{ name, text string }{
		{"raw", v},
		{"json (Go)", goJSON.String()},
		{"json without HTML escaping", noHTML.String()},
		{`json with \/`, strings.ReplaceAll(goJSON.String(), "/", `\/`)},
		{"json ASCII only", `{"k":"s3cr3t/Key+\u003c\u0026\u003e\"'\u00e9=?"}`},
		{"query escaped", "?k=" + url.QueryEscape(v)},
		{"query escaped, lower hex", "?k=" + lower(url.QueryEscape(v))},
		{"path escaped", "/p/" + url.PathEscape(v)},
		{"path escaped, lower hex", "/p/" + lower(url.PathEscape(v))},
		{"html", "<p>" + html.EscapeString(v) + "</p>"},
		{"html, named quotes", "<p>s3cr3t/Key+&lt;&amp;&gt;&quot;&#x27;é=?</p>"},
		{"html, numeric", "<p>s3cr3t/Key+&#60;&#38;&#62;&#34;&#39;é=?</p>"},
		{"base64", base64.StdEncoding.EncodeToString([]byte(v))},
		{"base64 unpadded", base64.RawStdEncoding.EncodeToString([]byte(v))},
		{"base64url", base64.URLEncoding.EncodeToString([]byte(v))},
		{"base64url unpadded", base64.RawURLEncoding.EncodeToString([]byte(v))},
		{"inside base64, offset 0", base64.StdEncoding.EncodeToString([]byte("abc" + v + "tail"))},
		{"inside base64, offset 1", base64.StdEncoding.EncodeToString([]byte("a" + v + "tail"))},
		{"inside base64, offset 2", base64.StdEncoding.EncodeToString([]byte("ab" + v + "tail"))},
		{"inside base64url, offset 1", base64.RawURLEncoding.EncodeToString([]byte(`{"a":"` + v + `"}`))},
	} {
		got := s.Scrub("before " + tc.text + " after")
		if !strings.Contains(got, secret.Redacted) || !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("%s: Scrub(%q) = %q, want the secret redacted", tc.name, tc.text, got)
		}
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("%s: Scrub left the secret's text: %q", tc.name, got)
		}
	}
	// Text that only resembles it stays.
	for _, text := range []string{"s3cr3t/Key", base64.StdEncoding.EncodeToString([]byte("s3cr3t/Key+<&>")), "plain words"} {
		if got := s.Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}

// lower is percent-encoded text with lower-case hex digits.
func lower(s string) string {
	return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(s, strings.ToLower)
}
