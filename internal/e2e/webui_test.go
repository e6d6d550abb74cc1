package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/devserver"
	"github.com/agentrun/agentrun/internal/testenv"
)

// chromium is the path of a Chromium (or Chrome) on PATH. Without one the
// test fails under CI=true and is skipped otherwise, saying what to install.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const install = "apt-get install chromium (Debian's package; .ci/run installs it)"
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: " + install)
	}
	t.Skip("no chromium on PATH (fails under CI=true): " + install)
	return ""
}

// browser is one headless Chromium tab, closed when the test ends.
type browser struct{ ctx context.Context }

// newBrowser starts the Chromium at path: headless, without the sandbox
// (the tests may run as root), the GPU or a first-run page, and with a
// window tall enough for a run's summary and an event's payloads.
func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Flag("headless", "new"), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1800))...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser and binds it to its context: this
	// one, not a page's bounded one (chromedp waits for the browser's
	// DevTools address for at most 20 s).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return &browser{ctx: ctx}
}

// show opens url and waits up to timeout until the rendered page's text
// (document.body.innerText: what a reader sees, after the Web UI's
// client-side code fetched and decoded the run) holds every string of
// want. It keeps a full-page screenshot as the artifact name, found or
// not, and fails the test with the page's text when a string is missing.
func (b *browser) show(t *testing.T, name, url string, timeout time.Duration, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	var text string
	var missing []string
	for {
		var err error
		text, err = chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
		missing = missing[:0]
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = append(missing, w)
			}
		}
		if err == nil && len(missing) == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
			continue
		}
		break
	}
	// The screenshot gets its own bound: the page's may be spent.
	shotCtx, cancelShot := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancelShot()
	if png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100)); err != nil {
		t.Errorf("screenshot of %s: %v", url, err)
	} else {
		keepArtifact(t, name, png)
	}
	if len(missing) > 0 {
		t.Fatalf("%s after %v does not show %d of %d expected texts, the first %.200q; the page's text:\n%s", url, timeout, len(missing), len(want), missing[0], text)
	}
}

// keepArtifact writes data to the folder $AGENTRUN_ARTIFACTS, or
// build/artifacts at the module root (git-ignored), and logs its path.
func keepArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	dir := os.Getenv("AGENTRUN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "build", "artifacts")
	}
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
	}
	if err != nil {
		t.Errorf("keep the artifact %s: %v", name, err)
		return
	}
	t.Logf("artifact: %s (%d bytes)", path, len(data))
}

// toolResultEvent is the id of the ActivityTaskCompleted event of a run's
// first CallTool activity.
func toolResultEvent(t *testing.T, srv *testenv.Server, run string) int64 {
	t.Helper()
	types := map[int64]string{}
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			types[e.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && types[a.GetScheduledEventId()] == "CallTool" {
			return e.GetEventId()
		}
	}
	t.Fatalf("run %s has no completed CallTool activity", run)
	return 0
}

// TestWebUIShowsDecodedRun: a real browser (headless Chromium) opens the
// Temporal Web UI of a dev server started with --ui-codec-endpoint pointing
// at the codecserver program, for an encrypted run whose tool output of
// over 1 KiB the run keeps by reference. The rendered run page shows the
// prompt and the answer, which the history holds only encrypted; the
// rendered page of the tool's result event shows the output whole, which
// the history holds only as a key and a 120-byte preview: the UI called
// the codec server, which decrypted the payloads and expanded the
// reference. Screenshots of both pages are kept as artifacts.
func TestWebUIShowsDecodedRun(t *testing.T) {
	t.Parallel()
	path := chromium(t)
	start := time.Now()
	worker, starter := testenv.Program(t, "worker"), testenv.Program(t, "starter")
	testenv.Program(t, "codecserver") // for startCodecServer, built with the others
	t.Logf("programs built: %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	uiPort, codecAddr := freePort(t), "127.0.0.1:"+freePort(t)
	srv := testenv.DevServerWith(t, devserver.Options{UIPort: uiPort, UICodecEndpoint: "http://" + codecAddr})
	ui := "http://127.0.0.1:" + uiPort
	f := newFleet(t, srv)
	lookup := newLookupRun(t, f.dir)
	env := f.env(keyEnv, lookup.Model)
	testenv.Start(t, env, worker)
	startCodecServer(t, f.env(keyEnv, "AGENTRUN_CODEC_ORIGINS="+ui), codecAddr)
	const run = "e2e-webui-lookup"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--wait", lookup.Prompt); code != 0 || !strings.Contains(out, "no policy on that topic") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	desc, err := srv.Describe(t, run)
	if err != nil {
		t.Fatal(err)
	}
	runPage := ui + "/namespaces/default/workflows/" + run + "/" + desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() + "/history"
	event := toolResultEvent(t, srv, run)
	t.Logf("dev server with the UI, worker, codec server and the run: %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	b := newBrowser(t, path)
	b.show(t, "webui-run.png", runPage, 30*time.Second, lookup.Prompt, "There is no policy on that topic.")
	// The output's tail is past the preview, so only the expanded
	// reference holds it; the whole output must be there, uncut.
	b.show(t, "webui-tool-output.png", runPage+"/events/"+strconv.FormatInt(event, 10), 30*time.Second,
		"content_ref", "; known topics: database access, vpn, laptop.", lookup.Output)
	t.Logf("browser: %v", time.Since(start).Round(time.Millisecond))
}
