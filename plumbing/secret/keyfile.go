package secret

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// FileModeError is a key file that group or others may read.
type FileModeError struct {
	Setting string // the setting that names the file, e.g. AGENTRUN_CODEC_KEY_FILE
	Path    string
	Mode    os.FileMode
}

func (e *FileModeError) Error() string {
	what := "read"
	if e.Mode.Perm()&0o044 == 0 {
		what = "change"
	}
	return fmt.Sprintf("%s %s: mode %04o lets group or others %s it; chmod 600 it", e.Setting, e.Path, e.Mode.Perm(), what)
}

// ReadKeyFile reads the key file path that setting names, as ssh reads a
// private key: a file whose permission bits let group or others read,
// write or run it (any of 0077) is refused with a *FileModeError, before
// a byte is read. The file's material (each line but blank lines, #
// comments and PEM armour, and a PEM body joined into one line) goes to
// the process's secrets (Add), so that it is scrubbed wherever it shows.
func ReadKeyFile(setting, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, &FileModeError{Setting: setting, Path: path, Mode: info.Mode()}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	AddKey(string(b))
	return b, nil
}

// AddKey adds the material of a key's text (a key file's, or PEM data
// given inline) to the process's secrets, as ReadKeyFile does.
func AddKey(text string) { Add(keyMaterial(text)...) }

// keyMaterial are the secret values of a key file's text.
func keyMaterial(text string) []string {
	var out []string
	var body strings.Builder
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "-----"): // PEM armour: -----BEGIN ...-----
			if body.Len() > 0 {
				out = append(out, body.String())
				body.Reset()
			}
		default:
			out = append(out, line)
			if !strings.Contains(line, ":") { // a PEM body line, not a PEM header
				body.WriteString(line)
			}
		}
	}
	return out
}
