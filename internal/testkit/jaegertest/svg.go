package jaegertest

import (
	"bytes"
	"fmt"
	"html"
	"time"
)

// SVG draws the trace as a waterfall, as a tracing backend's UI shows it:
// a row per span in tree order (a child under its parent, siblings by
// start time), its name indented by depth with the attributes that say
// what it did, and a bar from its start to its end on the trace's time
// axis, colored by service. README's picture of the hand example's trace
// is one (TestHandExampleJaegerTrace writes it to build/artifacts).
func (t Trace) SVG() []byte {
	const (
		rowH   = 22
		labelW = 470
		barW   = 470
		top    = 46
		pad    = 10
	)
	rows := t.treeOrder()
	var start, end time.Time
	for _, r := range rows {
		if start.IsZero() || r.span.Start.Before(start) {
			start = r.span.Start
		}
		if e := r.span.Start.Add(r.span.Duration); e.After(end) {
			end = e
		}
	}
	total := end.Sub(start)
	if total <= 0 {
		total = time.Microsecond
	}
	x := func(at time.Time) float64 { return labelW + pad + float64(at.Sub(start))/float64(total)*barW }
	colors := map[string]string{}
	palette := []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2"}

	var b bytes.Buffer
	width, height := labelW+barW+3*pad+80, top+len(rows)*rowH+30
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13" font-weight="bold">trace %s: %d spans, %s</text>`+"\n", pad, t.ID, len(rows), round(total))
	for i := 0; i <= 4; i++ { // the time axis
		ax := labelW + pad + float64(i)*barW/4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", ax, top-8, ax, top+len(rows)*rowH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#666666" text-anchor="middle">%s</text>`+"\n", ax, top-12, round(total*time.Duration(i)/4))
	}
	for i, r := range rows {
		s := r.span
		c, ok := colors[s.Service]
		if !ok {
			c = palette[len(colors)%len(palette)]
			colors[s.Service] = c
		}
		y := top + i*rowH
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f6f8fa"/>`+"\n", y, width, rowH)
		}
		label := s.Name
		if d := detail(s); d != "" {
			label += " " + d
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", pad+r.depth*14, y+15, html.EscapeString(label))
		x0, x1 := x(s.Start), x(s.Start.Add(s.Duration))
		if x1-x0 < 1 {
			x1 = x0 + 1
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" rx="2" fill="%s"><title>%s %s</title></rect>`+"\n",
			x0, y+4, x1-x0, rowH-8, c, html.EscapeString(s.Service), round(s.Duration))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#444444">%s</text>`+"\n", x1+4, y+15, round(s.Duration))
	}
	ly := top + len(rows)*rowH + 20
	lx := pad
	for _, svc := range t.services() {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly-10, colors[svc], lx+16, ly, html.EscapeString(svc))
		lx += 16 + 8*len(svc) + 24
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// row is a span and its depth in the trace's tree.
type row struct {
	span  Span
	depth int
}

// treeOrder returns the spans depth first, siblings by start time (Spans
// is in that order); a span whose parent is not in the trace is a root.
func (t Trace) treeOrder() []row {
	have := map[string]bool{}
	for _, s := range t.Spans {
		have[s.SpanID] = true
	}
	var out []row
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range t.Spans {
			if s.ParentID == parent || (parent == "" && s.ParentID != "" && !have[s.ParentID]) {
				out = append(out, row{s, depth})
				walk(s.SpanID, depth+1)
			}
		}
	}
	walk("", 0)
	return out
}

// services returns the trace's services in the order their first span
// appears.
func (t Trace) services() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range t.treeOrder() {
		if !seen[r.span.Service] {
			seen[r.span.Service] = true
			out = append(out, r.span.Service)
		}
	}
	return out
}

// detail is what a span's attributes say it did, for its label: a model
// step's tokens, a tool step's kind and the write guard's decision, a
// wait's outcome and who answered.
func detail(s Span) string {
	var d string
	add := func(format, key string) {
		if v := s.Attr(key); v != "" {
			d += fmt.Sprintf(format, v)
		}
	}
	add("%s ", "agentrun.step")
	add("in %s ", "gen_ai.usage.input_tokens")
	add("out %s ", "gen_ai.usage.output_tokens")
	add("%s ", "agentrun.tool.kind")
	add("guard=%s ", "agentrun.guard.decision")
	add("%s ", "agentrun.wait.outcome")
	add("by %s ", "agentrun.wait.answered_by")
	add("error=%s ", "error.type")
	if len(d) > 0 {
		d = d[:len(d)-1]
	}
	return d
}

// round is d to a readable precision.
func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}
