package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// renderedDetails is the Current Details frame of a run's page as the
// browser rendered it, read by detailsJS.
type renderedDetails struct {
	HTML     string   `json:"html"`
	Headings []string `json:"headings"` // the text of every h1 to h6
	Links    []string `json:"links"`    // the href of every link outside code
	Quote    string   `json:"quote"`    // the text of the blockquotes
	Code     []string `json:"code"`     // the text of every code element
}

// detailsJS finds the frame of the run page that shows the current details
// (the Web UI renders each markdown text in a frame of its own, from its
// /render route) and describes it as renderedDetails; "" until it is
// rendered.
const detailsJS = `(() => {
	for (const f of document.querySelectorAll("iframe")) {
		const d = f.contentDocument;
		if (!d || !d.body || !d.body.textContent.includes("Rejected input")) continue;
		const all = sel => [...d.querySelectorAll(sel)];
		return JSON.stringify({
			html: d.body.innerHTML,
			headings: all("h1, h2, h3, h4, h5, h6").map(h => h.textContent),
			links: all("a[href]").filter(a => !a.closest("code, pre")).map(a => a.getAttribute("href")),
			quote: all("blockquote").map(q => q.textContent).join("\n"),
			code: all("code").map(c => c.textContent),
		});
	}
	return "";
})()`

// TestWebUIShowsHostileTextAsText: a real browser (headless Chromium)
// opens the User Metadata page of a run in the dev server's Web UI, which
// renders the current details from markdown (raw HTML included) through
// its own /render route. The run is a session waiting Idle with a model
// answer that closes the quote and draws an approval section
// (</blockquote><h4>Approve</h4> and a link to http://evil.example), a
// markdown heading and a markdown link, and it holds a rejected signal
// whose name carries a backtick, an <h4> and a link. The rendered frame
// has no heading at all and no link outside code: the answer is the
// quote's text, the signal's name the text of a code element, and the
// commands an operator copies are still code.
func TestWebUIShowsHostileTextAsText(t *testing.T) {
	t.Parallel()
	path := chromium(t)
	worker, starter := testenv.Program(t, "worker"), testenv.Program(t, "starter")
	uiPort := freePort(t)
	srv := testenv.DevServerWith(t, devserver.Options{UIPort: uiPort})
	f := newFleet(t, srv)
	answer := "Done.\n" +
		`</blockquote><h4>Approve</h4><a href="http://evil.example">approve</a>` + "\n" +
		"# Approved by the operator\n" +
		"[approve](http://evil.example/md)\n" +
		"===\n" +
		"| a | b |\n|---|---|\n| 1 | 2 |"
	b, err := json.Marshal(llm.Script{Turns: []llm.Turn{{Text: answer}}})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(f.dir, "script.json")
	if err := os.WriteFile(script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Plain payloads, also under make test-encrypted: the Web UI here has
	// no codec server, and what it shows is the point.
	env := f.env("AGENTRUN_MODEL=scripted:"+script, "AGENTRUN_CODEC_KEYS=")
	testenv.Start(t, env, worker)
	const run = "e2e-webui-hostile"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--session", "--wait", "hi"); code != 0 || !strings.Contains(out, "run "+run+": Idle") {
		t.Fatalf("starter --session --wait: exit %d\n%s", code, out)
	}
	signal := "x` <h4>Signal approved</h4> <a href=\"http://evil.example/sig\">go</a> `y"
	f.rawTemporal(t, "workflow", "signal", "-w", run, "--name", signal, "--input", "{}")
	testenv.WaitFor(t, 30*time.Second, "the signal recorded as rejected", func() bool {
		s, err := state(t, srv, run)
		return err == nil && len(s.Rejected) == 1 && s.Rejected[0].Signal == signal
	})
	page := pageURL(t, srv, "http://127.0.0.1:"+uiPort, run, "user-metadata")

	br := newBrowser(t, path)
	d := br.details(t, "webui-hostile-details.png", page)
	t.Logf("rendered current details:\n%s", d.HTML)
	if len(d.Headings) > 0 {
		t.Errorf("the rendered details have headings %q: want none (an Idle run's details have none of their own)", d.Headings)
	}
	for _, href := range d.Links {
		if strings.Contains(href, "evil.example") {
			t.Errorf("the rendered details link to %s outside code", href)
		}
	}
	for _, want := range []string{`</blockquote><h4>Approve</h4><a href=`, `>approve</a>`, "# Approved by the operator", "[approve](http://evil.example/md)", "===", "| a | b |"} {
		if !strings.Contains(d.Quote, want) {
			t.Errorf("the quoted answer lacks %q as text: %q", want, d.Quote)
		}
	}
	if !slices.Contains(d.Code, signal) {
		t.Errorf("no code element holds the signal's name %q: %q", signal, d.Code)
	}
	if strings.Contains(d.HTML, "<table") {
		t.Error("the answer's table became a table")
	}
	for _, cmd := range []string{"temporal workflow signal -w " + run + " --name message", "reconcile message " + run + " TEXT --wait"} {
		if !slices.ContainsFunc(d.Code, func(c string) bool { return strings.Contains(c, cmd) }) {
			t.Errorf("no code element holds the command %q: %q", cmd, d.Code)
		}
	}
}

// details opens a run's page at url (open) and waits for the frame of its
// current details to be rendered.
func (b *browser) details(t *testing.T, name, url string) renderedDetails {
	t.Helper()
	var raw string
	text, err := b.open(t, name, url, "", func(ctx context.Context) (bool, error) {
		var err error
		raw, err = chromedp.Run(ctx, chromedp.Evaluate[string](detailsJS))
		return raw != "", err
	})
	if err != nil {
		t.Fatalf("%s: no frame with the current details after %v: %v; the page's text:\n%s", url, pageTimeout, err, text)
	}
	var d renderedDetails
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("the frame's description %q: %v", raw, err)
	}
	return d
}
