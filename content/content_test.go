package content_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/content"
)

func TestKeyOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ data, want string }{ // from sha256sum(1)
		{"", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"hello, world", "sha256:09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b"},
	} {
		if got := content.KeyOf([]byte(c.data)); got != c.want {
			t.Errorf("KeyOf(%q) = %s, want %s", c.data, got, c.want)
		}
		if err := content.ValidKey(c.want); err != nil {
			t.Errorf("ValidKey(%s) = %v, want nil", c.want, err)
		}
	}
}

func TestValidKeyMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ key, want string }{
		{"", `invalid content key "" (0 bytes): want "sha256:" followed by 64 lowercase hex digits`},
		{"sha256:../../etc/passwd", `invalid content key "sha256:../../etc/passwd" (23 bytes): want "sha256:" followed by 64 lowercase hex digits`},
		{"a\nb", `invalid content key "a\nb" (3 bytes): want "sha256:" followed by 64 lowercase hex digits`},
		{strings.Repeat("x", 1000), `invalid content key "` + strings.Repeat("x", 80) + `..." (1000 bytes): want "sha256:" followed by 64 lowercase hex digits`},
	} {
		err := content.ValidKey(c.key)
		if !errors.Is(err, content.ErrInvalidKey) || err.Error() != c.want {
			t.Errorf("ValidKey(%.20q) = %v\nwant %s", c.key, err, c.want)
		}
	}
}
