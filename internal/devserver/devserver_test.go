package devserver

import (
	"os"
	"strings"
	"testing"
)

// TestDemoServerIsTuned checks that the dev server of make demo and make
// dev-server starts with DynamicConfig too.
func TestDemoServerIsTuned(t *testing.T) {
	const script = "../../scripts/dev-server.sh"
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range DynamicConfig {
		if flag := "--dynamic-config-value " + s.Key + "=" + s.Value; !strings.Contains(string(b), flag) {
			t.Errorf("%s does not start the server with %s", script, flag)
		}
	}
}
