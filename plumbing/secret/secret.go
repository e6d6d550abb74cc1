package secret

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// MinLen is the shortest value treated as a secret.
const MinLen = 8

// Redacted replaces a secret value in scrubbed text.
const Redacted = "[redacted]"

// Scrubber replaces secret values in text. The zero value scrubs nothing;
// it is safe for concurrent use.
type Scrubber struct {
	mu    sync.RWMutex
	forms []string // every form of every value, longest first
	rep   *strings.Replacer
}

// New returns a scrubber of values.
func New(values ...string) *Scrubber {
	s := &Scrubber{}
	s.Add(values...)
	return s
}

// Add adds secret values; those shorter than MinLen are ignored.
func (s *Scrubber) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		for _, f := range forms(v) {
			if !slices.Contains(s.forms, f) {
				s.forms = append(s.forms, f)
			}
		}
	}
	// Longest first: a value that contains another is replaced whole.
	slices.SortStableFunc(s.forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(s.forms))
	for _, f := range s.forms {
		pairs = append(pairs, f, Redacted)
	}
	s.rep = strings.NewReplacer(pairs...)
}

// forms are the ways a value shows up in text: as it is, and in the common
// encodings of it (the package doc lists them).
func forms(v string) []string {
	out := []string{v}
	for _, j := range jsonForms(v) {
		out = append(out, j, strings.ReplaceAll(j, "/", `\/`))
	}
	for _, p := range []string{url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20")} {
		out = append(out, p, lowerHex(p))
	}
	h := html.EscapeString(v)
	out = append(out, h, strings.NewReplacer("&#39;", "&#x27;", "&#34;", "&quot;").Replace(h), htmlNumeric(v))
	out = append(out, base64Forms(v)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonForms are v inside a JSON string as Go's encoder writes it (<, >, &,
// U+2028 and U+2029 as \u escapes), without its HTML escaping, and with
// every character outside ASCII as \u escapes (as ASCII-only encoders
// write it).
func jsonForms(v string) []string {
	var out []string
	for _, escapeHTML := range []bool{true, false} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(v) == nil {
			s := strings.TrimSuffix(b.String(), "\n")
			out = append(out, s[1:len(s)-1])
		}
	}
	var b strings.Builder
	for _, r := range out[0] {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return append(out, b.String())
}

// lowerHex is percent-encoded text with its hex digits in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] != '%' {
			continue
		}
		for j := i + 1; j <= i+2; j++ {
			if 'A' <= b[j] && b[j] <= 'F' {
				b[j] += 'a' - 'A'
			}
		}
	}
	return string(b)
}

// htmlNumeric is v with each character html.EscapeString escapes written
// as a decimal character reference (&#60; for <).
func htmlNumeric(v string) string {
	var b strings.Builder
	for _, r := range v {
		if strings.ContainsRune(`<>&'"`, r) {
			fmt.Fprintf(&b, "&#%d;", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// base64Forms are v in standard and URL base64, with and without padding,
// and, for v inside a longer encoded value, the characters that encode v
// alone at each of the three offsets v can start at within a group of
// three bytes: the characters that also hold bits of the bytes before or
// after v are left out, so they match whatever v is next to.
func base64Forms(v string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		for k := range 3 {
			s := enc.EncodeToString(append(make([]byte, k), v...))
			// Character i holds bits 6i to 6i+5: those of the k bytes
			// before v end at bit 8k, those of v at 8(k+len(v)).
			first, end := (8*k+5)/6, 8*(k+len(v))/6
			out = append(out, s[first:end])
		}
	}
	return out
}

// Scrub returns text with every secret value replaced by Redacted.
func (s *Scrubber) Scrub(text string) string {
	s.mu.RLock()
	rep := s.rep
	s.mu.RUnlock()
	if rep == nil || text == "" {
		return text
	}
	return rep.Replace(text)
}

// Err returns err with its message scrubbed, still matching what err
// matches (errors.Is, errors.As); err itself when it holds no secret.
func (s *Scrubber) Err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := s.Scrub(msg); clean != msg {
		return &scrubbed{msg: clean, err: err}
	}
	return err
}

// scrubbed is an error printed scrubbed that unwraps to the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Names of the worker's credentials, whatever their names say.
var named = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_KEY_DATA", "PGPASSWORD"}

// secretName matches variable names that say they hold a secret; paths
// and file names (…_PATH, …_FILE, …_DIR) do not.
var (
	secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)`)
	notSecret  = regexp.MustCompile(`(?i)_(PATH|FILE|DIR)$`)
)

// SecretName reports whether an environment variable's name says it holds
// a secret (e.g. GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY).
func SecretName(name string) bool {
	return slices.Contains(named, name) || secretName.MatchString(name) && !notSecret.MatchString(name)
}

// FromEnviron returns the secret values of an environment (os.Environ's
// form): the named credentials, variables whose names say they are
// secrets, and the password in the AGENTRUN_JOURNAL URL.
func FromEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		if SecretName(k) {
			out = append(out, v)
		}
		if k == "AGENTRUN_JOURNAL" {
			if u, err := url.Parse(v); err == nil {
				if p, ok := u.User.Password(); ok {
					out = append(out, p)
				}
				out = append(out, u.Query()["password"]...)
			}
		}
	}
	return out
}

var (
	procOnce sync.Once
	proc     = &Scrubber{}
)

// process returns the process's scrubber, seeded from its environment.
func process() *Scrubber {
	procOnce.Do(func() { proc.Add(FromEnviron(os.Environ())...) })
	return proc
}

// Add adds values to the process's secrets (those of its environment are
// there from the start).
func Add(values ...string) { process().Add(values...) }

// Scrub scrubs text of the process's secrets.
func Scrub(text string) string { return process().Scrub(text) }

// Err scrubs err's message of the process's secrets.
func Err(err error) error { return process().Err(err) }
