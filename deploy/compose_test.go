package deploy

import (
	"bufio"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/clustertest"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
)

// Paths from this package's folder, where go test runs.
const (
	composePath      = "../docker-compose.yml"
	dockerfilePath   = "../Dockerfile"
	dockerignorePath = "../.dockerignore"
	repoRoot         = ".."
)

// The pinned versions: the server and UI that the pinned Temporal CLI's dev
// server runs (shared/DESIGN.md §6), so that the compose setup and the tests
// run the same Temporal.
const (
	serverImage     = "temporalio/server:1.29.1"
	uiImage         = "temporalio/ui:2.42.1"
	adminToolsRepo  = "temporalio/admin-tools"
	adminToolsMinor = "1.29.1"
)

var wantServices = []string{"postgres", "agentrun-db", "temporal-schema", "temporal", "temporal-setup", "temporal-ui", "worker"}

// composeFile is the part of a compose file the checks read.
type composeFile struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image           string   `yaml:"image"`
	Build           any      `yaml:"build"`
	Entrypoint      any      `yaml:"entrypoint"`
	Command         any      `yaml:"command"`
	Environment     any      `yaml:"environment"` // a map or a list of KEY[=VALUE]
	Volumes         []any    `yaml:"volumes"`     // short strings or long maps
	DependsOn       any      `yaml:"depends_on"`  // a list or a map
	StopGracePeriod string   `yaml:"stop_grace_period"`
	StopSignal      string   `yaml:"stop_signal"`
	Profiles        []string `yaml:"profiles"`
	Deploy          struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	return c
}

// envVar is one entry of a service's environment. Null is true for a bare
// name: the value is passed through from the environment of docker compose.
type envVar struct {
	Value string
	Null  bool
}

func environment(t *testing.T, name string, s service) map[string]envVar {
	t.Helper()
	env := map[string]envVar{}
	switch e := s.Environment.(type) {
	case nil:
	case map[string]any:
		for k, v := range e {
			if v == nil {
				env[k] = envVar{Null: true}
			} else {
				env[k] = envVar{Value: fmt.Sprint(v)}
			}
		}
	case []any:
		for _, item := range e {
			k, v, ok := strings.Cut(fmt.Sprint(item), "=")
			env[k] = envVar{Value: v, Null: !ok}
		}
	default:
		t.Fatalf("service %s: environment is a %T, want a map or a list", name, e)
	}
	return env
}

// interpolation matches a compose variable reference: ${NAME}, ${NAME:-default},
// ${NAME-default}, ${NAME:?err}, ${NAME?err}, and $NAME.
var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// withDefaults resolves s as docker compose would in an empty environment:
// every reference takes its default (or the empty string). The checks must
// not depend on the environment of whoever runs the tests.
func withDefaults(s string) string {
	s = strings.ReplaceAll(s, "$$", "\x00")
	s = interpolation.ReplaceAllStringFunc(s, func(m string) string {
		sub := interpolation.FindStringSubmatch(m)
		if sub[2] == ":-" || sub[2] == "-" {
			return sub[3]
		}
		return ""
	})
	return strings.ReplaceAll(s, "\x00", "$")
}

// onlyReference reports whether s is a single variable reference with no
// literal default, e.g. "${OPENAI_API_KEY}".
func onlyReference(s string) bool {
	m := interpolation.FindStringSubmatch(s)
	return m != nil && m[0] == s && m[3] == ""
}

// words flattens a command or entrypoint (a string or a list) to its words.
func words(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, w := range v {
			out = append(out, strings.Fields(fmt.Sprint(w))...)
		}
		return out
	}
	return strings.Fields(fmt.Sprint(v))
}

// mount is one entry of a service's volumes.
type mount struct{ Source, Target, Type string }

func mounts(t *testing.T, c composeFile, name string) []mount {
	t.Helper()
	var out []mount
	for _, v := range c.Services[name].Volumes {
		var m mount
		switch v := v.(type) {
		case string:
			parts := strings.Split(v, ":")
			if len(parts) == 1 { // an anonymous volume
				m = mount{Target: parts[0], Type: "volume"}
				break
			}
			m = mount{Source: parts[0], Target: parts[1], Type: "volume"}
			if strings.HasPrefix(m.Source, ".") || strings.HasPrefix(m.Source, "/") || strings.HasPrefix(m.Source, "~") {
				m.Type = "bind"
			}
		case map[string]any:
			m = mount{Source: fmt.Sprint(v["source"]), Target: fmt.Sprint(v["target"]), Type: fmt.Sprint(v["type"])}
		default:
			t.Fatalf("service %s: a volume is a %T", name, v)
		}
		out = append(out, m)
	}
	return out
}

// dependencies maps each service that name depends on to its condition
// (service_started for the list form).
func dependencies(t *testing.T, c composeFile, name string) map[string]string {
	t.Helper()
	deps := map[string]string{}
	switch d := c.Services[name].DependsOn.(type) {
	case nil:
	case []any:
		for _, s := range d {
			deps[fmt.Sprint(s)] = "service_started"
		}
	case map[string]any:
		for s, opts := range d {
			cond := "service_started"
			if o, ok := opts.(map[string]any); ok && o["condition"] != nil {
				cond = fmt.Sprint(o["condition"])
			}
			deps[s] = cond
		}
	default:
		t.Fatalf("service %s: depends_on is a %T", name, d)
	}
	return deps
}

// mountedScripts returns the contents of the files under ./deploy that the
// service runs: words of its entrypoint and command that name a path inside
// one of its bind mounts of a repository folder.
func mountedScripts(t *testing.T, c composeFile, name string) map[string]string {
	t.Helper()
	s := c.Services[name]
	scripts := map[string]string{}
	for _, w := range append(words(s.Entrypoint), words(s.Command)...) {
		for _, m := range mounts(t, c, name) {
			if m.Type != "bind" || !strings.HasPrefix(w, m.Target+"/") {
				continue
			}
			rel := path.Join(m.Source, strings.TrimPrefix(w, m.Target+"/"))
			file := filepath.Join(repoRoot, filepath.FromSlash(rel))
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("service %s runs %s, which is %s in the repository: %v", name, w, rel, err)
			}
			scripts[rel] = string(b)
		}
	}
	if len(scripts) == 0 {
		t.Fatalf("service %s runs no script from a mounted repository folder (entrypoint %v, command %v)", name, s.Entrypoint, s.Command)
	}
	return scripts
}

func TestComposeServices(t *testing.T) {
	c := loadCompose(t)
	for _, name := range wantServices {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("service %s is missing", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if r := c.Services["worker"].Deploy.Replicas; r == nil || *r < 2 {
		got := "unset"
		if r != nil {
			got = fmt.Sprint(*r)
		}
		t.Errorf("worker: deploy.replicas is %s, want a fleet of at least 2", got)
	}
	env := environment(t, "worker", c.Services["worker"])
	if got := withDefaults(env["TEMPORAL_ADDRESS"].Value); got != "temporal:7233" {
		t.Errorf("worker: TEMPORAL_ADDRESS = %q, want temporal:7233", got)
	}
	if got := withDefaults(env["AGENTRUN_TICKETS"].Value); !strings.HasPrefix(got, "/data/") {
		t.Errorf("worker: AGENTRUN_TICKETS = %q, want a path in the container's /data", got)
	}
	if c.Services["worker"].Build == nil {
		t.Error("worker: no build: want the image built from ./Dockerfile")
	}
}

func TestComposeImagesArePinned(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		if s.Image == "" {
			if s.Build == nil {
				t.Errorf("service %s has neither image nor build", name)
			}
			continue
		}
		img := withDefaults(s.Image)
		if img != s.Image {
			t.Errorf("service %s: image %q depends on the environment: pin it in the file", name, s.Image)
		}
		repo, tag, ok := strings.Cut(img, ":")
		if !ok || tag == "" || tag == "latest" {
			t.Errorf("service %s: image %q is not pinned to a version", name, img)
		}
		if repo == adminToolsRepo && !strings.HasPrefix(tag, adminToolsMinor) {
			t.Errorf("service %s: image %q: want admin-tools of the server's release %s", name, img, adminToolsMinor)
		}
	}
	for name, want := range map[string]string{"temporal": serverImage, "temporal-ui": uiImage} {
		if got := c.Services[name].Image; got != want {
			t.Errorf("service %s: image %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"temporal-schema", "temporal-setup"} {
		if repo, _, _ := strings.Cut(c.Services[name].Image, ":"); repo != adminToolsRepo {
			t.Errorf("service %s: image %q, want %s", name, c.Services[name].Image, adminToolsRepo)
		}
	}
}

func TestComposeWorkerStopsGracefully(t *testing.T) {
	w := loadCompose(t).Services["worker"]
	grace, err := time.ParseDuration(w.StopGracePeriod)
	if err != nil {
		t.Fatalf("worker: stop_grace_period %q: %v", w.StopGracePeriod, err)
	}
	raw := environment(t, "worker", w)["AGENTRUN_STOP_TIMEOUT"].Value
	if raw == "" {
		t.Fatal("worker: AGENTRUN_STOP_TIMEOUT is not set: set it explicitly, below stop_grace_period")
	}
	stop, err := time.ParseDuration(withDefaults(raw))
	if err != nil {
		t.Fatalf("worker: AGENTRUN_STOP_TIMEOUT %q: %v", raw, err)
	}
	// Docker sends SIGKILL after the grace period; the worker needs its stop
	// timeout plus a moment to report the steps it gave up on and disconnect.
	if grace < stop+5*time.Second {
		t.Errorf("worker: stop_grace_period %v must exceed AGENTRUN_STOP_TIMEOUT %v by at least 5s", grace, stop)
	}
	if w.StopSignal != "" && w.StopSignal != "SIGTERM" {
		t.Errorf("worker: stop_signal %q, want SIGTERM (the worker stops gracefully on it)", w.StopSignal)
	}
}

// TestComposeWorkerSharesNoVolume: the replicas of the worker share nothing
// but PostgreSQL and Temporal. A named volume (or a writable bind mount) of
// a replicated service is mounted by every replica, so the worker has none:
// only read-only bind mounts of configuration.
func TestComposeWorkerSharesNoVolume(t *testing.T) {
	c := loadCompose(t)
	for _, m := range mounts(t, c, "worker") {
		readOnly := false
		for _, v := range c.Services["worker"].Volumes {
			switch v := v.(type) {
			case string:
				if parts := strings.Split(v, ":"); len(parts) == 3 && parts[1] == m.Target && slices.Contains(strings.Split(parts[2], ","), "ro") {
					readOnly = true
				}
			case map[string]any:
				if fmt.Sprint(v["target"]) == m.Target && v["read_only"] == true {
					readOnly = true
				}
			}
		}
		if m.Type != "bind" || !readOnly {
			t.Errorf("worker: %s mounted at %s (%s, read-only %v) would be shared by every replica: keep durable state in PostgreSQL (AGENTRUN_JOURNAL)", m.Source, m.Target, m.Type, readOnly)
		}
	}
}

// TestComposeWorkerJournalIsPostgres: AGENTRUN_JOURNAL is a postgres:// URL
// of the database that the agentrun-db setup creates on the compose
// PostgreSQL, with the same user, and a password from a variable whose
// default the setup uses too.
func TestComposeWorkerJournalIsPostgres(t *testing.T) {
	c := loadCompose(t)
	raw := environment(t, "worker", c.Services["worker"])["AGENTRUN_JOURNAL"].Value
	u, err := url.Parse(withDefaults(raw))
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Fatalf("worker: AGENTRUN_JOURNAL = %q, want a postgres:// URL (%v)", raw, err)
	}
	if userinfo, _, _ := strings.Cut(strings.TrimPrefix(raw, u.Scheme+"://"), "@"); !interpolation.MatchString(userinfo) {
		t.Errorf("worker: AGENTRUN_JOURNAL holds a literal password: use a variable such as ${AGENTRUN_DB_PASSWORD:-...}")
	}
	host := u.Hostname()
	if _, ok := c.Services[host]; !ok {
		t.Errorf("worker: AGENTRUN_JOURNAL names host %q, which is not a service of the compose file", host)
	}
	if host != "postgres" {
		t.Errorf("worker: AGENTRUN_JOURNAL names host %q, want the compose PostgreSQL (postgres)", host)
	}
	if port := u.Port(); port != "" && port != "5432" {
		t.Errorf("worker: AGENTRUN_JOURNAL port %s, want 5432", port)
	}
	setup := environment(t, "agentrun-db", c.Services["agentrun-db"])
	pass, _ := u.User.Password()
	for k, got := range map[string]string{"DB_USER": u.User.Username(), "DB_NAME": strings.TrimPrefix(u.Path, "/"), "DB_PASSWORD": pass} {
		if want := withDefaults(setup[k].Value); got != want {
			t.Errorf("worker: AGENTRUN_JOURNAL's %s is %q, but agentrun-db creates %q", strings.ToLower(strings.TrimPrefix(k, "DB_")), got, want)
		}
	}
	if got := withDefaults(setup["PGHOST"].Value); got != host {
		t.Errorf("agentrun-db: PGHOST = %q, want the worker's database host %q", got, host)
	}
	scripts := mountedScripts(t, c, "agentrun-db")
	for _, want := range []string{"CREATE ROLE", "CREATE DATABASE", "ON_ERROR_STOP=1"} {
		if !anyContains(scripts, want) {
			t.Errorf("agentrun-db: its scripts never mention %q", want)
		}
	}
}

func TestComposeStartupOrder(t *testing.T) {
	c := loadCompose(t)
	for _, d := range []struct{ service, on, condition string }{
		{"worker", "temporal-setup", "service_completed_successfully"},
		{"worker", "agentrun-db", "service_completed_successfully"},
		{"agentrun-db", "postgres", "service_healthy"},
		{"temporal", "temporal-schema", "service_completed_successfully"},
		{"temporal-schema", "postgres", "service_healthy"},
	} {
		if got := dependencies(t, c, d.service)[d.on]; got != d.condition {
			t.Errorf("%s depends on %s with condition %q, want %q", d.service, d.on, got, d.condition)
		}
	}
	if _, ok := dependencies(t, c, "temporal-setup")["temporal"]; !ok {
		t.Error("temporal-setup does not depend on temporal")
	}
}

// serverWorkdir is the working directory of the temporalio/server image: a
// relative DYNAMIC_CONFIG_FILE_PATH is resolved against it.
const serverWorkdir = "/etc/temporal"

// mountedFile returns the repository file that a path inside service name's
// container comes from, through one of its bind mounts.
func mountedFile(t *testing.T, c composeFile, name, target string) (string, bool) {
	t.Helper()
	for _, m := range mounts(t, c, name) {
		rel, ok := strings.CutPrefix(target, path.Clean(m.Target)+"/")
		if m.Type == "bind" && ok {
			return filepath.Join(repoRoot, filepath.FromSlash(path.Join(m.Source, rel))), true
		}
	}
	return "", false
}

// dynamicValue is one constrained value of a dynamic config key.
type dynamicValue struct {
	Value       any            `yaml:"value"`
	Constraints map[string]any `yaml:"constraints"`
}

func TestComposeServerDynamicConfig(t *testing.T) {
	c := loadCompose(t)
	cfg := withDefaults(environment(t, "temporal", c.Services["temporal"])["DYNAMIC_CONFIG_FILE_PATH"].Value)
	if cfg == "" {
		t.Fatal("temporal: DYNAMIC_CONFIG_FILE_PATH is not set: the server would run without agentrun's dynamic config")
	}
	if !path.IsAbs(cfg) {
		cfg = path.Join(serverWorkdir, cfg)
	}
	file, ok := mountedFile(t, c, "temporal", cfg)
	if !ok {
		t.Fatalf("temporal: the dynamic config %s is not in a bind mount of a repository folder", cfg)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("temporal: dynamic config %s: %v", cfg, err)
	}
	var keys map[string][]dynamicValue
	if err := yaml.Unmarshal(b, &keys); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	// The same values as every dev server the project starts: without them
	// each shard dispatches at most 20 tasks a second (~90 ms a step).
	for _, want := range devserver.DynamicConfig {
		vals, ok := keys[want.Key]
		if !ok {
			t.Errorf("%s: no %s (want %s)", file, want.Key, want.Value)
			continue
		}
		if len(vals) != 1 {
			t.Errorf("%s: %s has %d values, want one: - value: %s", file, want.Key, len(vals), want.Value)
			continue
		}
		if got := fmt.Sprint(vals[0].Value); got != want.Value {
			t.Errorf("%s: %s = %s, want %s", file, want.Key, got, want.Value)
		}
		if len(vals[0].Constraints) != 0 {
			t.Errorf("%s: %s is constrained to %v, want it for every namespace and queue", file, want.Key, vals[0].Constraints)
		}
	}
}

func TestComposeSetupCreatesSearchAttributes(t *testing.T) {
	scripts := mountedScripts(t, loadCompose(t), "temporal-setup")
	for _, name := range []string{"AgentRunStatus", "AgentRunStep", "AgentRunForkOf"} {
		found := false
		for _, text := range scripts {
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, "temporal operator search-attribute create") &&
					strings.Contains(line, "--name "+name) && strings.Contains(line, "--type Keyword") {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("temporal-setup: no `temporal operator search-attribute create --name %s --type Keyword` in %v", name, slices.Sorted(maps.Keys(scripts)))
		}
	}
	for _, want := range []string{"operator cluster health", "operator namespace create"} {
		if !anyContains(scripts, want) {
			t.Errorf("temporal-setup: its scripts never run `temporal %s`", want)
		}
	}
}

func TestComposeSchemaSetup(t *testing.T) {
	c := loadCompose(t)
	scripts := mountedScripts(t, c, "temporal-schema")
	for _, want := range []string{
		"temporal-sql-tool", "setup-schema", "update-schema",
		"postgresql/v12", "temporal_visibility", "visibility",
	} {
		if !anyContains(scripts, want) {
			t.Errorf("temporal-schema: its scripts never mention %q", want)
		}
	}
	for _, name := range []string{"temporal-schema", "temporal"} {
		if got := environment(t, name, c.Services[name])["DB"].Value; got != "postgres12" {
			t.Errorf("%s: DB = %q, want postgres12", name, got)
		}
	}
}

// secretName matches environment variables that hold credentials.
var secretName = regexp.MustCompile(`(?i)(API_?KEY|TOKEN|SECRET|PASSWORD|PWD)$`)

// secretValue matches strings that look like real provider keys.
var secretValue = regexp.MustCompile(`\b(sk-(ant-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16})\b`)

func TestComposeHasNoSecrets(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		for k, v := range environment(t, name, s) {
			if !secretName.MatchString(k) {
				continue
			}
			// API keys and tokens: passed through, with no value or default
			// here. Database passwords: a variable (a development default is
			// allowed, so `docker compose up` works out of the box).
			isKey := !strings.HasSuffix(strings.ToUpper(k), "PASSWORD") && !strings.HasSuffix(strings.ToUpper(k), "PWD")
			switch {
			case v.Null:
			case isKey && !onlyReference(v.Value):
				t.Errorf("service %s: %s has a value in the file (%q): leave it bare to pass it through", name, k, v.Value)
			case !isKey && !interpolation.MatchString(v.Value):
				t.Errorf("service %s: %s is a literal: use a variable such as ${%s:-...}", name, k, k)
			}
		}
	}
	env := environment(t, "worker", c.Services["worker"])
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		if v, ok := env[k]; !ok || !v.Null {
			t.Errorf("worker: %s should be listed bare (passed through from the environment), got %+v present=%v", k, v, ok)
		}
	}
	for _, f := range []string{composePath, dockerfilePath} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := secretValue.Find(b); m != nil {
			t.Errorf("%s contains what looks like a credential: %.8s...", f, m)
		}
	}
}

// TestComposeAgentrunSettingsExist: every AGENTRUN_ variable the compose
// file sets is one the programs read (config.Names).
func TestComposeAgentrunSettingsExist(t *testing.T) {
	c := loadCompose(t)
	seen := 0
	for name, s := range c.Services {
		for k := range environment(t, name, s) {
			if !strings.HasPrefix(k, "AGENTRUN_") {
				continue
			}
			seen++
			if !slices.Contains(config.Names, k) {
				t.Errorf("service %s sets %s, which no program reads (not in config.Names)", name, k)
			}
		}
	}
	if seen == 0 {
		t.Error("no AGENTRUN_ settings in the compose file")
	}
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Stage int // index of the FROM it belongs to (0 is the first stage)
	Cmd   string
	Args  string
}

func loadDockerfile(t *testing.T) (ins []instruction, stages []string) {
	t.Helper()
	f, err := os.Open(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var logical strings.Builder
	sc := bufio.NewScanner(f)
	flush := func() {
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stages = append(stages, strings.TrimSpace(args))
		}
		ins = append(ins, instruction{Stage: len(stages) - 1, Cmd: cmd, Args: strings.TrimSpace(args)})
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), `\`); ok {
			logical.WriteString(body + " ")
			continue
		}
		logical.WriteString(line)
		flush()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	return ins, stages
}

func TestDockerfile(t *testing.T) {
	ins, stages := loadDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(stages))
	}
	if !strings.HasPrefix(stages[0], "golang:1.26") {
		t.Errorf("build stage FROM %q, want golang:1.26 (go.mod's Go)", stages[0])
	}
	final := len(stages) - 1
	if !strings.HasPrefix(stages[final], "debian:bookworm-slim") {
		t.Errorf("final stage FROM %q, want debian:bookworm-slim", stages[final])
	}

	var build, user, stopSignal string
	var entry []string
	for _, in := range ins {
		switch {
		case in.Cmd == "RUN" && strings.Contains(in.Args, "go build"):
			build = in.Args
		case in.Cmd == "USER" && in.Stage == final:
			user = in.Args
		case in.Cmd == "STOPSIGNAL" && in.Stage == final:
			stopSignal = in.Args
		case (in.Cmd == "ENTRYPOINT" || in.Cmd == "CMD") && in.Stage == final:
			entry = append(entry, in.Args)
		}
	}
	if !strings.Contains(build, "CGO_ENABLED=0") {
		t.Errorf("go build %q: want CGO_ENABLED=0 (static binaries)", build)
	}
	for _, prog := range []string{"./worker", "./starter", "./reconcile", "./codecserver"} {
		if !slices.Contains(strings.Fields(build), prog) {
			t.Errorf("go build %q does not build %s", build, prog)
		}
	}
	name, _, _ := strings.Cut(user, ":")
	if name == "" || name == "root" || name == "0" {
		t.Errorf("final stage USER %q: want a non-root user", user)
	}
	if stopSignal != "SIGTERM" {
		t.Errorf("STOPSIGNAL %q, want SIGTERM", stopSignal)
	}
	if !strings.Contains(strings.Join(entry, " "), `"worker"`) {
		t.Errorf("ENTRYPOINT/CMD %v: want the worker by default", entry)
	}
}

func TestDockerignoreKeepsSources(t *testing.T) {
	b, err := os.ReadFile(dockerignorePath)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	// The build needs the module files and every package; bin/ holds a
	// 250 MB CLI that must stay out of the build context.
	for _, keep := range []string{"go.mod", "go.sum", "worker", "starter", "reconcile", "codecserver", "internal", "plumbing", "agent"} {
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, keep); ok {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, keep)
			}
		}
	}
	if !slices.Contains(patterns, "bin") && !slices.Contains(patterns, "bin/") && !slices.Contains(patterns, "/bin") {
		t.Error(".dockerignore does not exclude bin/")
	}
}

func anyContains(files map[string]string, s string) bool {
	for _, text := range files {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// TestComposeWorkerVersioning: the workers join a worker deployment whose
// name the worker accepts, each image derives its own build id (none is set
// in the file, or worker and worker-next would share one), worker-next is
// the worker's twin with an image of its own behind the "upgrade" profile,
// and worker-current makes the first build current after the workers start.
func TestComposeWorkerVersioning(t *testing.T) {
	c := loadCompose(t)
	w, next, cur := c.Services["worker"], c.Services["worker-next"], c.Services["worker-current"]
	env := environment(t, "worker", w)
	dep := withDefaults(env["AGENTRUN_DEPLOYMENT"].Value)
	s, err := config.Load(func(k string) string { return map[string]string{"AGENTRUN_DEPLOYMENT": dep}[k] })
	if err != nil || s.Deployment == "" {
		t.Fatalf("worker: AGENTRUN_DEPLOYMENT = %q: %v; want a deployment name, versioning on", dep, err)
	}
	if _, ok := env["AGENTRUN_BUILD_ID"]; ok {
		t.Error("worker: AGENTRUN_BUILD_ID is set: worker and worker-next would join as one build; let each image derive its own")
	}
	if !slices.Contains(next.Profiles, "upgrade") || next.Build == nil || next.Image == "" || next.Image == w.Image {
		t.Errorf("worker-next: profiles %v, image %q (worker's %q); want profile upgrade and a build with an image of its own", next.Profiles, next.Image, w.Image)
	}
	if !maps.Equal(environment(t, "worker-next", next), env) || next.StopGracePeriod != w.StopGracePeriod {
		t.Error("worker-next: its environment or stop_grace_period differs from worker's: it must be the same worker, built from newer code")
	}
	if got := dependencies(t, c, "worker-current")["worker"]; got != "service_started" {
		t.Errorf("worker-current depends on worker with %q, want service_started", got)
	}
	if got := environment(t, "worker-current", cur)["AGENTRUN_DEPLOYMENT"].Value; got != env["AGENTRUN_DEPLOYMENT"].Value {
		t.Errorf("worker-current: AGENTRUN_DEPLOYMENT = %q, want the worker's %q", got, env["AGENTRUN_DEPLOYMENT"].Value)
	}
	if scripts := mountedScripts(t, c, "worker-current"); !anyContains(scripts, "worker deployment set-current-version") {
		t.Error("worker-current: its scripts never run `temporal worker deployment set-current-version`")
	}
}

// TestComposeAndClusterShareServerFiles: the compose file's Temporal
// services run the scripts that `make cluster` and the cluster tests run
// (internal/testkit/clustertest), and the server reads the one configuration next
// to its script, so the two topologies cannot drift.
func TestComposeAndClusterShareServerFiles(t *testing.T) {
	c := loadCompose(t)
	for name, want := range map[string]string{
		"temporal":        clustertest.ServerScript,
		"temporal-schema": clustertest.SchemaScript,
		"temporal-setup":  clustertest.SetupScript,
		"agentrun-db":     clustertest.AgentrunDBScript,
	} {
		scripts := mountedScripts(t, c, name)
		if _, ok := scripts[want]; !ok || len(scripts) != 1 {
			t.Errorf("service %s runs %v, want %s (what make cluster runs)", name, slices.Sorted(maps.Keys(scripts)), want)
		}
	}
	// The server's script starts it with the configuration next to it,
	// and the temporal service mounts that folder.
	script, err := os.ReadFile(filepath.Join(repoRoot, clustertest.ServerScript))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.TrimSuffix(path.Base(clustertest.ServerConfig), ".yaml")
	if path.Dir(clustertest.ServerConfig) != path.Dir(clustertest.ServerScript) || !strings.Contains(string(script), "--config . --env "+env) {
		t.Errorf("%s does not start the server with %s (--config . --env %s)", clustertest.ServerScript, clustertest.ServerConfig, env)
	}
	if _, ok := mountedFile(t, c, "temporal", "/deploy/"+path.Base(clustertest.ServerConfig)); !ok {
		t.Errorf("service temporal does not mount %s", clustertest.ServerConfig)
	}
	// The dynamic config the compose file names is the script's default,
	// which the cluster uses.
	dyn := withDefaults(environment(t, "temporal", c.Services["temporal"])["DYNAMIC_CONFIG_FILE_PATH"].Value)
	file, ok := mountedFile(t, c, "temporal", dyn)
	if rel, err := filepath.Rel(repoRoot, file); !ok || err != nil || filepath.ToSlash(rel) != "deploy/dynamicconfig/development-sql.yaml" ||
		!strings.Contains(string(script), "$dir/dynamicconfig/development-sql.yaml") {
		t.Errorf("service temporal's dynamic config %s is not %s's default, deploy/dynamicconfig/development-sql.yaml", dyn, clustertest.ServerScript)
	}
	// The configuration: PostgreSQL (postgres12) for both stores, 4
	// history shards by default.
	cfg, err := os.ReadFile(filepath.Join(repoRoot, clustertest.ServerConfig))
	if err != nil {
		t.Fatal(err)
	}
	text := string(cfg)
	if !strings.HasPrefix(text, "# enable-template") {
		t.Errorf("%s does not start with # enable-template: the server would not render it", clustertest.ServerConfig)
	}
	for _, want := range []string{`numHistoryShards: {{ default "4" (env "NUM_HISTORY_SHARDS") }}`, "visibilityStore: visibility"} {
		if !strings.Contains(text, want) {
			t.Errorf("%s: no %q", clustertest.ServerConfig, want)
		}
	}
	if n := strings.Count(text, "pluginName: postgres12"); n != 2 {
		t.Errorf("%s: %d stores on pluginName postgres12, want 2 (persistence and visibility)", clustertest.ServerConfig, n)
	}
}
