package mdtext

import (
	"strings"
	"testing"
)

func TestBlockFenceOutrunsTheText(t *testing.T) {
	t.Parallel()
	if got := Block("", "a ````` b"); !strings.HasPrefix(got, "``````\n") || !strings.HasSuffix(got, "\n``````\n") {
		t.Fatalf("Block around 5 backticks = %q, want a fence of 6", got)
	}
	if got := Block("json", "{}"); got != "```json\n{}\n```\n" {
		t.Fatalf("Block = %q", got)
	}
}

func TestCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"tool/2/0/echo":       "`tool/2/0/echo`",
		"a`b":                 "``a`b``",
		"`x":                  "`` `x ``",
		"two\nlines":          "`two lines`",
		"</code><h4>x</h4>":   "`</code><h4>x</h4>`",
		" both ":              "`  both  `",
		"x ``` y":             "````x ``` y````",
		"esc\x1b[31m and del": "`esc [31m and del`",
	} {
		if got := Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain words, 50% off; a/b? \"q\" 'q' a@b": "plain words, 50% off; a/b? \"q\" 'q' a@b",
		"# Approved":                          `\# Approved`,
		"</blockquote><h4>x</h4>":             `\</blockquote\>\<h4\>x\</h4\>`,
		`<a href="http://evil.example">`:      `\<a href="http\://evil\.example"\>`,
		"[ok](http://evil.example)":           `\[ok\]\(http\://evil\.example\)`,
		"**bold** &amp; a_b ~~s~~ $x$ ^1 a|b": `\*\*bold\*\* \&amp; a\_b \~\~s\~\~ \$x\$ \^1 a\|b`,
		"one\n# two":                          `one \# two`,
		"www.evil.example":                    `www\.evil\.example`,
		"déjà vu":                             "déjà vu",
		`back\slash`:                          `back\\slash`,
		"=== a=b == x==":                      "&#61;== a=b &#61;= x==",
		"- item 1. two":                       `\- item 1\. two`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Lines("a\n> b\r\n# c\n==="); len(got) != 4 || got[1] != `\> b` || got[2] != `\# c` || got[3] != "&#61;==" {
		t.Fatalf("Lines = %q", got)
	}
}
