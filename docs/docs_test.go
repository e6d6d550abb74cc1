package docs_test

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// maxReadmeLines bounds the README: a tour that fits on a few screens,
// with the details in docs/.
const maxReadmeLines = 200

// notInLayout are top-level folders that are not the project's own:
// build output (.gitignore'd).
var notInLayout = map[string]bool{"bin": true}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeIsShort(t *testing.T) {
	n := strings.Count(read(t, "../README.md"), "\n")
	if n > maxReadmeLines {
		t.Fatalf("README.md has %d lines; keep it at most %d and move details into docs/", n, maxReadmeLines)
	}
}

// layoutDir matches a folder name in the README's layout block: a word
// ending in "/" at the start of a line or after spaces.
var layoutDir = regexp.MustCompile(`(?m)(?:^|\s)([a-z][a-z0-9_-]*)/`)

// TestReadmeLayout: the layout names every top-level folder of the
// checkout and no folder that does not exist.
func TestReadmeLayout(t *testing.T) {
	readme := read(t, "../README.md")
	i := strings.Index(readme, "## Layout\n")
	if i < 0 {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	block := readme[i:]
	start := strings.Index(block, "```\n")
	end := strings.Index(block[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README.md's layout section has no code block")
	}
	listed := map[string]bool{}
	for _, m := range layoutDir.FindAllStringSubmatch(block[start+4:start+4+end], -1) {
		listed[m[1]] = true
	}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || notInLayout[name] {
			continue
		}
		have[name] = true
		if !listed[name] {
			missing = append(missing, name+"/")
		}
	}
	var extra []string
	for name := range listed {
		if !have[name] {
			extra = append(extra, name+"/")
		}
	}
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("README.md's layout does not match the folders: not listed %v; listed but absent %v", missing, extra)
	}
}

// mdLink matches a Markdown link's target; heading matches a heading.
var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fence   = regexp.MustCompile("(?s)```.*?```")
)

// anchor is GitHub's fragment for a heading: lower case, punctuation
// other than '-' and '_' dropped, spaces as '-'.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		out[anchor(strings.ReplaceAll(m[1], "`", ""))] = true
	}
	return out
}

// TestLinks: every relative link in the README and docs/ names a file
// that exists, and a #fragment names a heading of that file.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	if len(pages) < 7 {
		t.Fatalf("found %d pages (%v); want the README and the docs", len(pages), pages)
	}
	checked := 0
	for _, page := range pages {
		text := read(t, page)
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %s does not exist", page, target, path)
				continue
			}
			checked++
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(read(t, path))[frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, target, path, frag)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d links; want the README's and the docs' (20 or more)", checked)
	}
}

// TestTracePicture: the README's picture of the hand example's trace (a
// copy of the one TestHandExampleJaegerTrace draws from the trace Jaeger
// gives back) is a well-formed SVG with the run's root, its steps and its
// approval wait.
func TestTracePicture(t *testing.T) {
	const path = "images/hand-example-trace.svg"
	if !strings.Contains(read(t, "../README.md"), "](docs/"+path+")") {
		t.Fatalf("README.md does not show docs/%s", path)
	}
	svg := read(t, path)
	d := xml.NewDecoder(strings.NewReader(svg))
	var texts []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if c, ok := tok.(xml.CharData); ok {
			texts = append(texts, string(c))
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"StartWorkflow:AgentRun", "chat scripted llm/1", "execute_tool lookup", "wait approval approve by update",
		"execute_tool create_ticket tool/2/0/create_ticket write guard=ran", "chat scripted llm/3", "agentrun-starter", "agentrun-worker"} {
		if !strings.Contains(all, want) {
			t.Errorf("%s shows no %q", path, want)
		}
	}
}
