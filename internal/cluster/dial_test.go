package cluster

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/internal/config"
)

// TestDialCompression: AGENTRUN_GRPC_COMPRESSION=none, as config.Load
// reads it, reaches the options Dial dials with as the sdk's
// GrpcCompressionNone; unset or gzip leaves the sdk's default (nil: gzip).
func TestDialCompression(t *testing.T) {
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml"))
	for value, none := range map[string]bool{"": false, "gzip": false, "none": true, " NONE ": true} {
		cfg, err := config.Load(func(k string) string {
			if k == "AGENTRUN_GRPC_COMPRESSION" {
				return value
			}
			return ""
		})
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		opts, err := dialOptions(nil, nil, nil, cfg.GRPCCompression, nil)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		got := opts.ConnectionOptions.GrpcCompression
		if _, isNone := got.(*client.GrpcCompressionNone); isNone != none || (!none && got != nil) {
			t.Errorf("AGENTRUN_GRPC_COMPRESSION=%q: the client's GrpcCompression is %T, want %s", value, got, map[bool]string{true: "*client.GrpcCompressionNone", false: "nil (the sdk's gzip)"}[none])
		}
	}
}
