package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
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
	testkit.Unavailable(t, "chromium", errors.New("not on PATH: "+install))
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

// pageTimeout bounds the wait for a page to show what a test expects: the
// Web UI loads its code, then fetches the run from the dev server and has
// the codec server decode it (a few seconds on a loaded 2-core host).
const pageTimeout = 30 * time.Second

// pageURL is the address of the page tab ("history", "user-metadata")
// of run's current execution in the Web UI at ui.
func pageURL(t *testing.T, srv *testenv.Server, ui, run, tab string) string {
	t.Helper()
	desc, err := srv.Describe(t, run)
	if err != nil {
		t.Fatal(err)
	}
	return ui + "/namespaces/default/workflows/" + run + "/" + desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() + "/" + tab
}

// open opens url and polls ready every 250 ms, for at most pageTimeout,
// until it reports true or fails. Found or not, it then keeps a full-page
// screenshot as the artifact name, with the innermost boxes that scroll
// and hold end (unless "") scrolled to their end. It returns what failed
// (the page, the poll or the wait) and then the page's text.
func (b *browser) open(t *testing.T, name, url, end string, ready func(context.Context) (bool, error)) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageTimeout)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Navigate(url))
	for err == nil {
		var ok bool
		if ok, err = ready(ctx); err != nil || ok {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	// The screenshot gets its own bound: the page's may be spent.
	shotCtx, cancelShot := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancelShot()
	if end != "" {
		b.scrollTo(shotCtx, t, end)
	}
	if png, serr := chromedp.Run(shotCtx, chromedp.FullScreenshot(100)); serr != nil {
		t.Errorf("screenshot of %s: %v", url, serr)
	} else {
		keepArtifact(t, name, png)
	}
	if err != nil {
		text, _ := chromedp.Run(shotCtx, chromedp.Evaluate[string]("document.body.innerText"))
		return text, err
	}
	return "", nil
}

// show opens url (open) and waits until the rendered page's text
// (document.body.innerText: what a reader sees, after the Web UI's
// client-side code fetched and decoded the run) holds every string of
// want, scrolling the boxes that hold end to their end for the
// screenshot; it fails the test with the page's text when a string is
// missing.
func (b *browser) show(t *testing.T, name, url, end string, want ...string) {
	t.Helper()
	missing := slices.Clone(want)
	text, err := b.open(t, name, url, end, func(ctx context.Context) (bool, error) {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
		if err != nil {
			return false, err
		}
		missing = missing[:0]
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = append(missing, w)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s after %v: %v; missing %d of %d expected texts %.200q; the page's text:\n%s", url, pageTimeout, err, len(missing), len(want), missing, text)
	}
}

// scrollTo scrolls the innermost boxes of the page that scroll and hold
// text to their end, so that a screenshot shows it.
func (b *browser) scrollTo(ctx context.Context, t *testing.T, text string) {
	t.Helper()
	quoted, _ := json.Marshal(text)
	scroll := `(w => {
		const boxes = [...document.querySelectorAll("body *")].filter(el => el.scrollHeight > el.clientHeight && el.textContent.includes(w));
		const inner = boxes.filter(el => !boxes.some(o => o !== el && el.contains(o)));
		for (const el of inner) el.scrollTop = el.scrollHeight;
		return inner.length })(` + string(quoted) + `)`
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](scroll)); err != nil || n == 0 {
		t.Logf("scroll to %.40q: %d boxes, %v", text, n, err)
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
// first CallTool activity. It fails the test if the raw history (as the
// cluster keeps it, read without the codec) holds any of plain.
func toolResultEvent(t *testing.T, srv *testenv.Server, run string, plain ...string) int64 {
	t.Helper()
	types := map[int64]string{}
	var id int64
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			types[e.GetEventId()] = activities.Method(a.GetActivityType().GetName())
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && id == 0 && types[a.GetScheduledEventId()] == "CallTool" {
			id = e.GetEventId()
		}
		raw, err := protojson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plain {
			if bytes.Contains(raw, []byte(p)) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString([]byte(p)))) {
				t.Fatalf("event %d of the raw history holds %q: the page could show it without the codec server", e.GetEventId(), p)
			}
		}
	}
	if id == 0 {
		t.Fatalf("run %s has no completed CallTool activity", run)
	}
	return id
}

// clickShown clicks, from script, the first element matching the CSS
// selector sel that is shown (the UI renders some controls twice, one of
// them hidden for another screen size), waiting until there is one.
func clickShown(sel string) chromedp.Action[chromedp.Void] {
	quoted, _ := json.Marshal(sel)
	click := `(els => { const el = els.find(e => e.checkVisibility({visibilityProperty: true})); if (el) el.click(); return !!el })([...document.querySelectorAll(` + string(quoted) + `)])`
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for {
			if ok, err := chromedp.Evaluate[bool](click)(ctx, tg); err != nil || ok {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("no %s shown: %w", sel, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
}

// chooseSignal sets the signal name of the open signal form modal, and
// waits until the form takes it (its Submit is enabled). The form offers a
// list of the signals the run's workers declare once it has read them (the
// name is chosen there, or Custom and then typed), a text field until then
// or without any; the field is filled from script in one step, since the
// list may replace it at any moment.
func chooseSignal(modal, signal string) chromedp.Action[chromedp.Void] {
	quoted, _ := json.Marshal(signal)
	pick := `((m, name) => {
		if (!m) return "no open form";
		const submit = m.querySelector('[data-testid="confirm-modal-button"]');
		if (submit && !submit.disabled) return "";
		const field = m.querySelector("#signal-name");
		if (field) {
			field.value = name;
			field.dispatchEvent(new Event("input", { bubbles: true }));
			return "typed";
		}
		const button = m.querySelector('button[aria-controls="signal-select-select"]');
		if (!button) return "no name field or list";
		const options = [...m.querySelectorAll('#signal-select-select [role="option"]')];
		const named = text => options.find(o => (o.querySelector(".menu-item-wrapper") || o).textContent.trim() === text);
		const o = named(name) || named("Custom");
		if (!o) return "neither " + name + " nor Custom among " + options.map(o => o.textContent.trim()).join(", ");
		button.click();
		o.click();
		return "chose " + o.textContent.trim();
	})(document.querySelector("` + modal + `"), ` + string(quoted) + `)`
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		last := ""
		for {
			did, err := chromedp.Evaluate[string](pick)(ctx, tg)
			if err != nil || did == "" {
				return err
			}
			last = did
			select {
			case <-ctx.Done():
				return fmt.Errorf("the signal form does not take the name %s (last: %s): %w", signal, last, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
}

// signal sends the signal name with the JSON input through the Web UI's
// own form on the run page at url: More Actions, Send a Signal, the name
// (chooseSignal), the input typed into the payload editor, Submit; it waits until the
// form closes (the UI closes it once the signal is sent) and keeps a
// screenshot of the page as the artifact name.
func (b *browser) signal(t *testing.T, name, url, signal, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*pageTimeout)
	defer cancel()
	const modal = "#signal-confirmation-modal[open]"
	err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		clickShown(`button[aria-controls="workflow-actions"]`),
		clickShown(`[data-testid="signal-button"]`),
		chooseSignal(modal, signal),
		chromedp.Click(chromedp.CSS(modal+" .cm-content")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: payload})
			return err
		}),
		chromedp.Click(chromedp.CSS(modal+` [data-testid="confirm-modal-button"]`)),
	)
	// The form stays open, saying why, when the signal is not sent (an
	// /encode refused, say); it closes once it is.
	left := ""
	for err == nil {
		if left, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(d => d ? d.innerText : "")(document.querySelector("`+modal+`"))`)); err != nil || left == "" {
			break
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("the signal form is still open: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	shotCtx, cancelShot := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancelShot()
	if png, serr := chromedp.Run(shotCtx, chromedp.FullScreenshot(100)); serr == nil {
		keepArtifact(t, name, png)
	}
	if err != nil {
		text, _ := chromedp.Run(shotCtx, chromedp.Evaluate[string]("document.body.innerText"))
		t.Fatalf("send the signal %s through the Web UI at %s: %v; the form says %q; the page's text:\n%s", signal, url, err, left, text)
	}
}

// signalInput is the input payload of the run's first
// WorkflowExecutionSignaled event of signal name, as the cluster keeps it,
// and the event's id.
func signalInput(t *testing.T, srv *testenv.Server, run, name string) (*commonpb.Payload, int64) {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == name && len(a.GetInput().GetPayloads()) == 1 {
			return a.GetInput().GetPayloads()[0], e.GetEventId()
		}
	}
	t.Fatalf("run %s has no %s signal with one payload", run, name)
	return nil, 0
}

// TestWebUIShowsDecodedRun: a real browser (headless Chromium) opens the
// Temporal Web UI of a dev server started with --ui-codec-endpoint pointing
// at the codecserver program, for an encrypted run whose tool output of
// over 1 KiB the run keeps by reference. The rendered run page shows the
// prompt and the answer, which the history holds only encrypted; the
// rendered page of the tool's result event shows the output whole, which
// the history holds only as a key and a 120-byte preview: the UI called
// the codec server, which decrypted the payloads and expanded the
// reference. Then, from its own origin, the UI sends a message to an idle
// session through its signal form: the codec server (no token, loopback,
// the UI's origin named in AGENTRUN_CODEC_ORIGINS) seals the input on
// /encode, so the history holds it encrypted under the key and never in
// plain; the session answers it, and the signal's event page shows the
// input decoded. Screenshots of the pages are kept as artifacts.
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
	runPage := pageURL(t, srv, ui, run, "history")
	tail := "; known topics: database access, vpn, laptop." // past the reference's 120-byte preview
	event := toolResultEvent(t, srv, run, lookup.Prompt, "no policy on that topic", tail)
	t.Logf("dev server with the UI, worker, codec server and the run: %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	b := newBrowser(t, path)
	b.show(t, "webui-run.png", runPage, "", lookup.Prompt, "There is no policy on that topic.")
	// Only the expanded reference holds the output whole, and its tail.
	b.show(t, "webui-tool-output.png", runPage+"/events/"+strconv.FormatInt(event, 10), tail, "content_ref", lookup.Output, tail)
	t.Logf("browser: %v", time.Since(start).Round(time.Millisecond))

	// A session on a task queue of its own, whose model answers each
	// message; the UI sends it one.
	start = time.Now()
	sf := newFleet(t, srv)
	sf.queue += "-session"
	script := filepath.Join(sf.dir, "session.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"ready: {{last_user_message}}"},{"text":"noted: {{last_user_message}}"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	senv := sf.env(keyEnv, "AGENTRUN_MODEL=scripted:"+script)
	testenv.Start(t, senv, worker)
	const session, message = "e2e-webui-session", "sent from the web ui"
	if code, out := testenv.Run(t, senv, time.Minute, starter, "--id", session, "--session", "--wait", "hello"); code != 0 || !strings.Contains(out, "ready: hello") {
		t.Fatalf("starter --session --wait: exit %d\n%s", code, out)
	}
	sessionPage := pageURL(t, srv, ui, session, "history")
	b.signal(t, "webui-signal.png", sessionPage, "message", `{"Content": "`+message+`"}`)
	keyed := keyedClient(t, srv)
	var st workflows.State
	testenv.WaitFor(t, time.Minute, "the session to answer the UI's message", func() bool {
		s, err := stateWith(t, keyed, session)
		st = s
		return err == nil && s.Answer == "noted: "+message
	})
	st = waitStatusWith(t, keyed, session, "Idle", time.Minute)
	if st.Messages != 1 {
		t.Fatalf("state after the UI's message: %+v, want 1 message answered", st)
	}
	in, signaled := signalInput(t, srv, session, "message")
	if enc := string(in.GetMetadata()["encoding"]); enc != codec.Encoding || string(in.GetMetadata()[codec.MetadataKeyID]) != "k1" {
		t.Fatalf("the UI's signal input is %q under key %q in the history; want %s under k1 (sealed by the codec server's /encode)", enc, in.GetMetadata()[codec.MetadataKeyID], codec.Encoding)
	}
	it := srv.Client.GetWorkflowHistory(t.Context(), session, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := protojson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(message)) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString([]byte(message)))) {
			t.Fatalf("event %d of the session's raw history holds the UI's message %q", e.GetEventId(), message)
		}
	}
	// The UI shows the signal's input decoded: what /encode sealed.
	b.show(t, "webui-session.png", sessionPage+"/events/"+strconv.FormatInt(signaled, 10), "", "Workflow Execution Signaled", message)
	t.Logf("the UI's signal: %v", time.Since(start).Round(time.Millisecond))
}
