package cli

import (
	"testing"
)

func TestCommandsFor(t *testing.T) {
	t.Parallel()
	files := map[string]bool{"bin/starter": true, "bin/reconcile": true, "bin/temporal": true, "/opt/ar/starter": true, "/opt/ar/reconcile": true, "./starter": true, "reconcile": true}
	exists := func(p string) bool { return files[p] }
	cases := []struct {
		argv0 string
		path  []string // names on PATH
		want  Commands
	}{
		{"bin/starter", nil, Commands{"bin/starter", "bin/reconcile", "bin/temporal"}},
		{"bin/reconcile", []string{"temporal"}, Commands{"bin/starter", "bin/reconcile", "temporal"}},
		{"/tmp/go-build123/b001/exe/starter", nil, Commands{"go run ./starter", "go run ./reconcile", "bin/temporal"}},
		{"/root/.cache/go-build/9f/9f6b7a31d99657f3356c3a580ccb4aebd11d90e5d5e8dd53d6f1ebfbaf24fc4e-d/reconcile", []string{"temporal"}, Commands{"go run ./starter", "go run ./reconcile", "temporal"}},
		{"/opt/ar/starter", nil, Commands{"/opt/ar/starter", "/opt/ar/reconcile", "temporal"}},
		{"starter", []string{"starter", "reconcile"}, Commands{"starter", "reconcile", "temporal"}},
		{"./starter", nil, Commands{"./starter", "./reconcile", "temporal"}},
		{"/somewhere/starter", []string{"reconcile"}, Commands{"/somewhere/starter", "reconcile", "temporal"}},
		{"/my dir/starter", nil, Commands{"'/my dir/starter'", "'/my dir/reconcile'", "temporal"}},
	}
	for _, c := range cases {
		onPath := func(name string) bool {
			for _, n := range c.path {
				if n == name {
					return true
				}
			}
			return false
		}
		if got := commandsFor(c.argv0, exists, onPath); got != c.want {
			t.Errorf("CommandsFor(%q) with %v on PATH = %+v, want %+v", c.argv0, c.path, got, c.want)
		}
	}
}
