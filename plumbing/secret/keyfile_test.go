package secret_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/plumbing/secret"
)

// TestReadKeyFileMode: ReadKeyFile refuses a key file whose mode lets
// group or others read, change or run it (any bit of 0077) with a
// *FileModeError naming the setting, the file, its mode and the fix, and
// takes none of its material as a secret (nothing was read); 0600, 0400
// and 0700 are read whole and their material is scrubbed from then on.
func TestReadKeyFileMode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		want string // "" when read
	}{
		{0o600, ""},
		{0o400, ""},
		{0o700, ""},
		{0o644, "mode 0644 lets group or others read it; chmod 600 it"},
		{0o640, "mode 0640 lets group or others read it; chmod 600 it"},
		{0o604, "mode 0604 lets group or others read it; chmod 600 it"},
		{0o620, "mode 0620 lets group or others change it; chmod 600 it"},
		{0o602, "mode 0602 lets group or others change it; chmod 600 it"},
		{0o610, "mode 0610 lets group or others change it; chmod 600 it"},
		{0o601, "mode 0601 lets group or others change it; chmod 600 it"},
	} {
		material := fmt.Sprintf("key-material-of-mode-%04o-0123456789", tc.mode)
		path := filepath.Join(dir, fmt.Sprintf("key-%04o", tc.mode))
		if err := os.WriteFile(path, []byte(material+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		b, err := secret.ReadKeyFile("AGENTRUN_CODEC_KEY_FILE", path)
		scrubbed := !strings.Contains(secret.Scrub("say "+material), material)
		if tc.want == "" {
			if err != nil || string(b) != material+"\n" || !scrubbed {
				t.Errorf("mode %04o: %q, %v, scrubbed %v; want the file read whole and its material scrubbed", tc.mode, b, err, scrubbed)
			}
			continue
		}
		var modeErr *secret.FileModeError
		if !errors.As(err, &modeErr) || modeErr.Path != path || modeErr.Mode.Perm() != tc.mode {
			t.Errorf("mode %04o: %q, %v; want a *FileModeError for %s", tc.mode, b, err, path)
			continue
		}
		if want := "AGENTRUN_CODEC_KEY_FILE " + path + ": " + tc.want; err.Error() != want || b != nil {
			t.Errorf("mode %04o: %q, %q; want nothing and %q", tc.mode, b, err, want)
		}
		if scrubbed {
			t.Errorf("mode %04o: the refused file's material is taken as a secret: it was read", tc.mode)
		}
	}
}
