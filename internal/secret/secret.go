package secret

import (
	"cmp"
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
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

// forms are the ways a value shows up in text: as it is, and escaped.
func forms(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, url.QueryEscape(v), url.PathEscape(v))
	slices.Sort(out)
	return slices.Compact(out)
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
