package cluster_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/plumbing/secret"
)

// TestOptionsTLSKeyMode: the TLS client key file is a key file: mode 0644
// is refused in one line (a *config.Error: exit 2) naming the setting, the
// file and its mode; at 0600 the client gets the key pair, and the key's
// PEM body is scrubbed from text.
func TestOptionsTLSKeyMode(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := keyPair(t)
	certPath, keyPath := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(dir, "none.toml"))
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", certPath)
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", keyPath)

	_, err := cluster.Options(nil)
	want := "TEMPORAL_TLS_CLIENT_KEY_PATH (or the profile's tls.client_key_path) " + keyPath + ": mode 0644 lets group or others read it; chmod 600 it"
	if err == nil || err.Error() != want || !errors.As(err, new(*config.Error)) {
		t.Fatalf("Options with a key of mode 0644: %v, want the *config.Error %q", err, want)
	}

	if err := os.Chmod(keyPath, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := cluster.Options(nil)
	if err != nil {
		t.Fatalf("Options with a key of mode 0600: %v", err)
	}
	if tls := opts.ConnectionOptions.TLS; tls == nil || len(tls.Certificates) != 1 {
		t.Fatalf("TLS options %+v, want the client's key pair", opts.ConnectionOptions.TLS)
	}
	block, _ := pem.Decode(keyPEM)
	body := strings.Split(strings.TrimSpace(string(keyPEM)), "\n")[1]
	for _, text := range []string{body, string(pem.EncodeToMemory(block))} {
		if got := secret.Scrub(text); strings.Contains(got, body) {
			t.Errorf("Scrub left the key's PEM body: %q", got)
		}
	}
}

// keyPair is a self-signed certificate and its key, in PEM.
func keyPair(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentrun-test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
