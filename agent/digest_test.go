package agent_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestArgsDigest: the digest of arguments is the same whether they are
// inline or kept by reference under their content key, is the first 16
// hex digits of their SHA-256, and differs for other bytes.
func TestArgsDigest(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"title":"x","body":"y"}`)
	sum := sha256.Sum256(args)
	full := hex.EncodeToString(sum[:])
	want := "sha256:" + full[:16]
	for _, c := range []struct {
		name string
		got  string
	}{
		{"inline", agent.ArgsDigest(args, nil)},
		{"by reference", agent.ArgsDigest(nil, &agent.Ref{Key: "sha256:" + full, Size: len(args)})},
		{"a call", agent.ToolCall{Name: "t", Args: args}.Digest()},
	} {
		if c.got != want || !agent.ValidDigest(c.got) {
			t.Errorf("%s: %s, want %s", c.name, c.got, want)
		}
	}
	if other := agent.ArgsDigest(json.RawMessage(`{"title":"y"}`), nil); other == want {
		t.Fatalf("other arguments have the same digest %s", other)
	}
	if bad := agent.ArgsDigest(nil, &agent.Ref{Key: "not-a-key"}); !agent.ValidDigest(bad) || bad == agent.ArgsDigest(nil, nil) {
		t.Fatalf("a reference that is not a content key: digest %q", bad)
	}
	for _, d := range []string{"", "sha256:0123", "sha256:0123456789ABCDEF", "md5:0123456789abcdef", "sha256:0123456789abcdef0"} {
		if agent.ValidDigest(d) {
			t.Errorf("ValidDigest(%q) = true", d)
		}
	}
}
