package config_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/plumbing/secret"
)

// TestCodecSettings: the encryption keys come from AGENTRUN_CODEC_KEYS or
// AGENTRUN_CODEC_KEY_FILE, in order; unset, the codec is off; each bad
// setting is a one-line *config.Error naming the variable and never
// showing a key.
func TestCodecSettings(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32))
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 31))
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	c, err := load(nil)
	if err != nil || c.Codec != nil {
		t.Fatalf("no keys: codec %v, %v; want off", c.Codec, err)
	}
	c, err = load(map[string]string{"AGENTRUN_CODEC_KEYS": "k2:" + other + ",k1:" + good})
	if err != nil || c.Codec == nil || !slices.Equal(c.Codec.KeyIDs(), []string{"k2", "k1"}) {
		t.Fatalf("AGENTRUN_CODEC_KEYS: %v, %v", c.Codec, err)
	}
	c, err = load(map[string]string{"AGENTRUN_CODEC_KEY_FILE": file("keys", "# rotated 2026-12\nk2:"+other+"\nk1:"+good+"\n")})
	if err != nil || c.Codec == nil || !slices.Equal(c.Codec.KeyIDs(), []string{"k2", "k1"}) {
		t.Fatalf("AGENTRUN_CODEC_KEY_FILE: %v, %v", c.Codec, err)
	}

	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENTRUN_CODEC_KEYS": "k1:" + short}, `AGENTRUN_CODEC_KEYS: key "k1" is 31 bytes after base64 decoding, want 32`},
		{map[string]string{"AGENTRUN_CODEC_KEYS": "k1:" + good + ",k1:" + other}, `AGENTRUN_CODEC_KEYS: two keys have the id "k1"`},
		{map[string]string{"AGENTRUN_CODEC_KEYS": good}, `AGENTRUN_CODEC_KEYS: an entry without ':'`},
		{map[string]string{"AGENTRUN_CODEC_KEY_FILE": file("bad", "k1:"+good+"\njunk\n")}, `AGENTRUN_CODEC_KEY_FILE: ` + filepath.Join(dir, "bad") + `: line 2: an entry without ':'`},
		{map[string]string{"AGENTRUN_CODEC_KEY_FILE": file("dup", "k1:"+good+"\nk1:"+other+"\n")}, `AGENTRUN_CODEC_KEY_FILE: two keys have the id "k1"`},
		{map[string]string{"AGENTRUN_CODEC_KEY_FILE": file("empty", "\n")}, `AGENTRUN_CODEC_KEY_FILE: ` + filepath.Join(dir, "empty") + `: no keys`},
		{map[string]string{"AGENTRUN_CODEC_KEY_FILE": filepath.Join(dir, "missing")}, `AGENTRUN_CODEC_KEY_FILE: open `},
		{map[string]string{"AGENTRUN_CODEC_KEYS": "k1:" + good, "AGENTRUN_CODEC_KEY_FILE": file("k", "k1:"+good)}, `AGENTRUN_CODEC_KEYS and AGENTRUN_CODEC_KEY_FILE are both set`},
	} {
		_, err := load(tc.env)
		switch {
		case err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%v: error %v, want one line starting %q", tc.env, err, tc.want)
		case !errors.As(err, new(*config.Error)):
			t.Errorf("%v: error %T, want a *config.Error", tc.env, err)
		case strings.Contains(err.Error(), good) || strings.Contains(err.Error(), other) || strings.Contains(err.Error(), short):
			t.Errorf("%v: error %q shows a key", tc.env, err)
		}
	}
}

// TestCodecKeyFileMode: a key file that group or others may read or
// change is refused in one line naming the file, its mode and the fix, as
// ssh refuses such a private key; mode 0600 and 0400 are accepted.
func TestCodecKeyFileMode(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		want string // "" when accepted
	}{
		{0o600, ""},
		{0o400, ""},
		{0o644, "mode 0644 lets group or others read it; chmod 600 it"},
		{0o640, "mode 0640 lets group or others read it; chmod 600 it"},
		{0o604, "mode 0604 lets group or others read it; chmod 600 it"},
		{0o620, "mode 0620 lets group or others change it; chmod 600 it"},
	} {
		path := filepath.Join(dir, fmt.Sprintf("keys-%04o", tc.mode))
		if err := os.WriteFile(path, []byte("k1:"+good+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		c, err := load(map[string]string{"AGENTRUN_CODEC_KEY_FILE": path})
		if tc.want == "" {
			if err != nil || c.Codec == nil {
				t.Errorf("mode %04o: %v, want the keys read", tc.mode, err)
			}
			continue
		}
		want := "AGENTRUN_CODEC_KEY_FILE " + path + ": " + tc.want
		if err == nil || err.Error() != want || !errors.As(err, new(*config.Error)) {
			t.Errorf("mode %04o: error %v, want the *config.Error %q", tc.mode, err, want)
		}
	}
}

// TestCodecKeysScrubbed: once loaded, the codec's keys (from the file or
// from AGENTRUN_CODEC_KEYS) are scrubbed from text, in base64, hex and
// raw, inline or as the file holds them.
func TestCodecKeysScrubbed(t *testing.T) {
	t.Parallel()
	fromFile, inline := bytes.Repeat([]byte{0x61, 0x17}, 16), bytes.Repeat([]byte{0x62, 0x18}, 16)
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("k1:"+base64.StdEncoding.EncodeToString(fromFile)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := load(map[string]string{"AGENTRUN_CODEC_KEY_FILE": path}); err != nil {
		t.Fatal(err)
	}
	if _, err := load(map[string]string{"AGENTRUN_CODEC_KEYS": "k0:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)) + ",k2:" + base64.StdEncoding.EncodeToString(inline)}); err != nil {
		t.Fatal(err)
	}
	for _, key := range [][]byte{fromFile, inline} {
		for _, form := range []string{base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), hex.EncodeToString(key), strings.ToUpper(hex.EncodeToString(key)), string(key)} {
			text := "the key is " + form + "."
			if got := secret.Scrub(text); got != "the key is "+secret.Redacted+"." {
				t.Errorf("Scrub(%q) = %q, want the key redacted", text, got)
			}
		}
	}
}

// TestCodecServerSettings: the codec server's address, origins, host names
// and token, with their defaults; a bad value is one line naming the
// variable.
func TestCodecServerSettings(t *testing.T) {
	t.Parallel()
	c, err := load(map[string]string{"AGENTRUN_CODEC_ADDR": "0.0.0.0:9000", "AGENTRUN_CODEC_ORIGINS": "https://ui.example.com/, http://localhost:8080", "AGENTRUN_CODEC_TOKEN": "t0k",
		"AGENTRUN_CODEC_HOSTS": " Codec.internal, codec.internal:8234,10.0.0.5,[::1],[fe80::1]:80,"})
	want := config.CodecServer{Addr: "0.0.0.0:9000", Origins: []string{"https://ui.example.com", "http://localhost:8080"},
		Hosts: []string{"codec.internal", "codec.internal:8234", "10.0.0.5", "[::1]", "[fe80::1]:80"}, Token: "t0k"}
	if err != nil || !reflect.DeepEqual(c.CodecServer, want) {
		t.Fatalf("got %+v, %v; want %+v", c.CodecServer, err, want)
	}
	if c, err := load(map[string]string{"AGENTRUN_CODEC_ORIGINS": "*"}); err != nil || !reflect.DeepEqual(c.CodecServer.Origins, []string{"*"}) {
		t.Fatalf("origins *: %+v, %v", c.CodecServer, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENTRUN_CODEC_ADDR": "8234"}, `AGENTRUN_CODEC_ADDR="8234" is not a listen address`},
		{map[string]string{"AGENTRUN_CODEC_ADDR": "127.0.0.1:"}, `AGENTRUN_CODEC_ADDR="127.0.0.1:" is not a listen address`},
		{map[string]string{"AGENTRUN_CODEC_ORIGINS": "localhost:8233"}, `AGENTRUN_CODEC_ORIGINS: "localhost:8233" is not an origin`},
		{map[string]string{"AGENTRUN_CODEC_ORIGINS": "http://ui/path"}, `AGENTRUN_CODEC_ORIGINS: "http://ui/path" is not an origin`},
		{map[string]string{"AGENTRUN_CODEC_TOKEN": "two words"}, `AGENTRUN_CODEC_TOKEN holds white space`},
		{map[string]string{"AGENTRUN_CODEC_HOSTS": "http://codec.internal"}, `AGENTRUN_CODEC_HOSTS: "http://codec.internal" is not a host name`},
		{map[string]string{"AGENTRUN_CODEC_HOSTS": "codec.internal:port"}, `AGENTRUN_CODEC_HOSTS: "codec.internal:port" is not a host name`},
		{map[string]string{"AGENTRUN_CODEC_HOSTS": "::1"}, `AGENTRUN_CODEC_HOSTS: "::1" is not a host name`},
		{map[string]string{"AGENTRUN_CODEC_HOSTS": "a b"}, `AGENTRUN_CODEC_HOSTS: "a b" is not a host name`},
	} {
		_, err := load(tc.env)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !errors.As(err, new(*config.Error)) {
			t.Errorf("%v: error %v, want a one-line *config.Error starting %q", tc.env, err, tc.want)
		}
	}
}
