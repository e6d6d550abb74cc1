package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// badNames are tool names no provider takes: too long (by one byte, and by
// a MiB), with characters that are not letters, digits, '_' or '-' (a dot,
// a slash, a space, a newline, an escape, non-ASCII letters), and empty.
var badNames = []string{
	strings.Repeat("n", 65), strings.Repeat("x", 1<<20), "files.read", "files/read", "read file",
	"read\nfile", "read\u001b[2Jfile", "l\u00e9sen", "",
}

// badNamesList is the tools/list result of mode "bad-names": badNames and
// "lookup", a read.
func badNamesList() string {
	var tools []string
	for _, n := range append(badNames, "lookup") {
		name, _ := json.Marshal(n)
		tools = append(tools, fmt.Sprintf(`{"name":%s,"description":"a tool","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`, name))
	}
	return `{"tools":[` + strings.Join(tools, ",") + `]}`
}

// A server that lists tools whose names no provider takes (too long, or
// with characters other than letters, digits, '_' and '-'): the listing
// leaves each of them out with one warning line naming the server and the
// tool (quoted, at most 80 bytes of it), and keeps the tool with a good
// name. No such name reaches a spec, so none reaches a step name, an
// approval's marker or a search attribute.
func TestHostileServerBadToolNames(t *testing.T) {
	t.Parallel()
	out, _, rss := runClient(t, clientJob{Server: stdioServer("names", "bad-names"), ConnectTimeout: hostileTimeout})
	if out.Err != "" || len(out.Names) != 1 || out.Names[0] != "lookup" {
		t.Fatalf("listed %q (error %q), want only lookup", out.Names, out.Err)
	}
	var warned int
	for _, line := range strings.Split(strings.TrimSpace(out.Log), "\n") {
		var rec struct {
			Level, Msg, Server, Tool, Want string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %.200q: %v", line, err)
		}
		if rec.Msg != skippedMessage {
			continue
		}
		warned++
		if rec.Level != "WARN" || rec.Server != "names" || rec.Want != "1 to 64 letters, digits, '_' or '-'" || len(rec.Tool) > 120 || strings.ContainsAny(rec.Tool, "\n\x1b") {
			t.Errorf("warning %+v, want WARN naming the server, the tool quoted within 120 bytes, and the rule", rec)
		}
	}
	if warned != len(badNames) {
		t.Errorf("%d warnings, want one per left-out tool (%d)\n%.2000s", warned, len(badNames), out.Log)
	}
	if !strings.Contains(out.Log, `"tool":"\"files.read\""`) || !strings.Contains(out.Log, `... (1048576 bytes)`) {
		t.Errorf("the warnings do not show the names as quoted and cut:\n%.2000s", out.Log)
	}
	if rss > maxChildRSS {
		t.Errorf("the client's peak RSS is %d MiB, want at most %d", rss>>20, maxChildRSS>>20)
	}
}
