package shell

import "testing"

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"run-1":                  "run-1",
		"tool/2/0/create_ticket": "tool/2/0/create_ticket",
		"":                       "''",
		"two words":              "'two words'",
		`{"Marker":"x"}`:         `'{"Marker":"x"}'`,
		"it's":                   `'it'\''s'`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
