package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
)

// Worker Versioning settings: a worker joins the Temporal worker deployment
// AGENTRUN_DEPLOYMENT as build AGENTRUN_BUILD_ID. Versioning is on exactly
// when AGENTRUN_DEPLOYMENT is set; unset, a worker polls unversioned, as
// before Worker Versioning (and AGENTRUN_BUILD_ID must be unset too).

// maxVersionPart bounds a deployment name and a build id: the server
// refuses build ids past 255 bytes (limit.workerBuildIdSize) and
// deployment names past 480 (half of limit.maxIDLength less a prefix).
const maxVersionPart = 255

var (
	// deploymentName: the server refuses "." and ":" in a deployment name
	// and a leading "__"; we also keep out what a list query or a shell
	// would have to quote.
	deploymentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	// buildID: the server refuses only a leading "__"; we allow what git
	// revisions and module versions use.
	buildID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]*$`)
)

// Valid forms, for error messages.
const (
	deploymentRule = "want letters, digits, _ and -, starting with a letter or digit, at most 255 characters (Temporal refuses . and :), e.g. agentrun"
	buildIDRule    = "want letters, digits, _, -, . and +, starting with a letter or digit, at most 255 characters, e.g. 1f3c2ab9e0d4 or v1.4.0"
)

// checkVersionPart returns a one-line error when v is set and not a valid
// value of name ("" means unset and is valid).
func checkVersionPart(name, v, what string, form *regexp.Regexp, rule string) error {
	switch {
	case v == "":
		return nil
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("%s=%q is empty: %s", name, v, rule)
	case len(v) > maxVersionPart:
		return fmt.Errorf("%s is %d characters long: %s", name, len(v), rule)
	case !form.MatchString(v):
		return fmt.Errorf("%s=%q is not %s: %s", name, v, what, rule)
	}
	return nil
}

// DefaultBuildID is the build id of a worker whose AGENTRUN_BUILD_ID is
// unset, derived from the running binary: the first 12 hex digits of the
// git revision it was built from (go build stamps it in a git checkout),
// with "-dirty" when the checkout had changes; else the module version
// (go install ...@v1.4.0); else "exe-" and the first 12 hex digits of the
// executable's SHA-256 (a build without VCS data, such as the Dockerfile's:
// the same sources and toolchain give the same id).
func DefaultBuildID() (string, error) {
	info, _ := debug.ReadBuildInfo()
	return buildIDOf(info, os.Executable)
}

// buildIDOf is DefaultBuildID over a given build info and executable.
func buildIDOf(info *debug.BuildInfo, executable func() (string, error)) (string, error) {
	if info != nil {
		var rev string
		dirty := false
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				dirty = kv.Value == "true"
			}
		}
		if rev != "" {
			id := rev[:min(12, len(rev))]
			if dirty {
				id += "-dirty"
			}
			return id, nil
		}
		if v := info.Main.Version; v != "" && v != "(devel)" && buildID.MatchString(v) && len(v) <= maxVersionPart {
			return v, nil
		}
	}
	path, err := executable()
	if err != nil {
		return "", fmt.Errorf("the build has no revision or version and its executable is unknown (%v)", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the build has no revision or version and its executable cannot be read (%v)", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("the build has no revision or version and its executable cannot be read (%v)", err)
	}
	return "exe-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}
