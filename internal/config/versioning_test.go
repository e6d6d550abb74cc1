package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersioningSettings: AGENTRUN_DEPLOYMENT turns Worker Versioning on,
// with AGENTRUN_BUILD_ID or the build id derived from the binary; neither
// set keeps today's unversioned worker; anything the server would refuse
// (or a list query would have to quote) is a one-line error naming the
// setting and the valid form.
func TestVersioningSettings(t *testing.T) {
	t.Parallel()
	derived, err := DefaultBuildID()
	if err != nil || !buildID.MatchString(derived) {
		t.Fatalf("DefaultBuildID() = %q, %v; want a valid build id", derived, err)
	}
	long := strings.Repeat("x", 256)
	for _, tc := range []struct {
		dep, bid         string
		wantDep, wantBid string
		err              string // "" for no error
	}{
		{"", "", "", "", ""},
		{"agentrun", "v1.4.0+build.7", "agentrun", "v1.4.0+build.7", ""},
		{"agentrun", "1f3c2ab9e0d4-dirty", "agentrun", "1f3c2ab9e0d4-dirty", ""},
		{"agentrun-prod_2", "", "agentrun-prod_2", derived, ""},
		{strings.Repeat("d", 255), strings.Repeat("b", 255), strings.Repeat("d", 255), strings.Repeat("b", 255), ""},
		{"a.b", "", "", "", `AGENTRUN_DEPLOYMENT="a.b" is not a deployment name: want letters, digits, _ and -`},
		{"a:b", "", "", "", `AGENTRUN_DEPLOYMENT="a:b" is not a deployment name`},
		{"__a", "", "", "", `AGENTRUN_DEPLOYMENT="__a" is not a deployment name`},
		{"a b", "", "", "", `AGENTRUN_DEPLOYMENT="a b" is not a deployment name`},
		{"a\nb", "", "", "", `AGENTRUN_DEPLOYMENT="a\nb" is not a deployment name`},
		{"  ", "", "", "", `AGENTRUN_DEPLOYMENT="  " is empty: want letters`},
		{long, "", "", "", "AGENTRUN_DEPLOYMENT is 256 characters long: want"},
		{"agentrun", "a b", "", "", `AGENTRUN_BUILD_ID="a b" is not a build id: want letters, digits, _, -, . and +`},
		{"agentrun", "__b", "", "", `AGENTRUN_BUILD_ID="__b" is not a build id`},
		{"agentrun", "b:1", "", "", `AGENTRUN_BUILD_ID="b:1" is not a build id`},
		{"agentrun", "\t", "", "", `AGENTRUN_BUILD_ID="\t" is empty`},
		{"agentrun", long, "", "", "AGENTRUN_BUILD_ID is 256 characters long"},
		{"", "v1", "", "", `AGENTRUN_BUILD_ID="v1" is set but AGENTRUN_DEPLOYMENT is not`},
	} {
		env := map[string]string{"AGENTRUN_DEPLOYMENT": tc.dep, "AGENTRUN_BUILD_ID": tc.bid}
		s, err := Load(func(k string) string { return env[k] })
		switch {
		case tc.err == "" && (err != nil || s.Deployment != tc.wantDep || s.BuildID != tc.wantBid):
			t.Errorf("%q %q: %q %q, %v; want %q %q", tc.dep, tc.bid, s.Deployment, s.BuildID, err, tc.wantDep, tc.wantBid)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q %q: error %v; want one line starting %q", tc.dep, tc.bid, err, tc.err)
		}
	}
}

// TestBuildIDOf: the default build id is the git revision (12 hex digits,
// "-dirty" when modified), else the module version, else a hash of the
// executable.
func TestBuildIDOf(t *testing.T) {
	t.Parallel()
	exe := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(exe, []byte("a build"), 0o755); err != nil {
		t.Fatal(err)
	}
	at := func() (string, error) { return exe, nil }
	lost := func() (string, error) { return "", errors.New("no /proc") }
	rev := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201094433-0a8bcfeb1fcf+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0a8bcfeb1fcf779edfef2ceb8546c4dda303dbe3"}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		exe  func() (string, error)
		want string // "" for an error
	}{
		{"revision", rev("false"), lost, "0a8bcfeb1fcf"},
		{"modified", rev("true"), lost, "0a8bcfeb1fcf-dirty"},
		{"version", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, lost, "v1.4.0"},
		// sha256("a build")
		{"devel", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, at, "exe-2bd9a07eddf2"},
		{"no info", nil, at, "exe-2bd9a07eddf2"},
		{"nothing", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, lost, ""},
	} {
		got, err := buildIDOf(tc.info, tc.exe)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
