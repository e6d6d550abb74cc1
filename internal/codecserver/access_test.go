package codecserver

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// request sends method path to srv with the headers of hdr ("Host" sets
// the Host header) and returns the status and the body.
func request(t *testing.T, url, method string, hdr map[string]string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// oneLineText fails the test unless text is one line.
func oneLineText(t *testing.T, what, text string) {
	t.Helper()
	if s := strings.TrimSuffix(text, "\n"); s == "" || strings.Contains(s, "\n") {
		t.Errorf("%s: %q, want one line", what, text)
	}
}

// TestRefusesOtherOriginsAndHosts: with the defaults' rules (one Web UI
// origin, no more Host names), a /decode with an Origin that is not
// admitted is refused (403, one line naming what is admitted), not served
// without CORS headers; so is one whose Host is a name rebound to this
// address (a page of evil.example that resolves its name to 127.0.0.1 is
// same-origin to itself, so only the Host says so), for /decode, /encode
// and the preflight. The admitted origin, no Origin at all (the CLI), the
// loopback names with the port and a name of AGENTRUN_CODEC_HOSTS pass.
func TestRefusesOtherOriginsAndHosts(t *testing.T) {
	srv, _, _ := setup(t, "", 0)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	body := list(t, jsonPayload(t, "hello"))
	for _, path := range []string{"/decode", "/encode"} {
		for _, method := range []string{http.MethodPost, http.MethodOptions} {
			code, text := request(t, srv.URL+path, method, map[string]string{"Origin": "http://evil.example"}, body)
			if code != http.StatusForbidden || !strings.Contains(text, `"http://evil.example" is not admitted`) || !strings.Contains(text, origin) {
				t.Errorf("%s %s from http://evil.example: %d %q, want 403 naming the admitted %s", method, path, code, text, origin)
			}
			oneLineText(t, method+" "+path, text)
			for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1:1", "localhost"} {
				code, text := request(t, srv.URL+path, method, map[string]string{"Host": host, "Origin": origin}, body)
				if code != http.StatusForbidden || !strings.Contains(text, "is not this server's") || !strings.Contains(text, "localhost:"+port) {
					t.Errorf("%s %s with Host %s: %d %q, want 403 naming the admitted hosts", method, path, host, code, text)
				}
				oneLineText(t, "Host "+host, text)
			}
		}
	}
	for _, hdr := range []map[string]string{
		{"Origin": origin},
		{},
		{"Host": "localhost:" + port},
		{"Host": "127.0.0.1:" + port},
		{"Host": "[::1]:" + port},
	} {
		if code, text := request(t, srv.URL+"/decode", http.MethodPost, hdr, body); code != http.StatusOK {
			t.Errorf("/decode with %v: %d %q, want 200", hdr, code, text)
		}
	}

	named := serve(t, Options{Origins: []string{origin}, Hosts: []string{"codec.internal", "ui.example:8443"}})
	for host, want := range map[string]int{
		"codec.internal:9999": http.StatusOK, "CODEC.internal": http.StatusOK,
		"ui.example:8443": http.StatusOK, "ui.example:8444": http.StatusForbidden, "other.internal:8443": http.StatusForbidden,
	} {
		if code, text := request(t, named.URL+"/decode", http.MethodPost, map[string]string{"Host": host}, body); code != want {
			t.Errorf("AGENTRUN_CODEC_HOSTS codec.internal,ui.example:8443, Host %s: %d %q, want %d", host, code, text, want)
		}
	}
}

// TestEncodeNeedsAuthenticatedCaller: /encode seals for a caller that is
// authenticated only. Without a token, on a loopback address, the Web UI's
// own origin (named in the origins) may encode, as the UI does to send a
// signal; a request without an Origin (any program) or from an origin
// admitted by "*" alone is refused (403, one line), and so is every
// tokenless /encode on an address beyond loopback. An /encode of no
// payloads (the CLI's, for a query without input) is answered for anyone.
// With a token, the token opens it to any caller. /decode is served in
// each of these cases.
func TestEncodeNeedsAuthenticatedCaller(t *testing.T) {
	body := list(t, jsonPayload(t, "seal me"))
	open := func(url string, hdr map[string]string, want int) {
		t.Helper()
		code, text := request(t, url+"/encode", http.MethodPost, hdr, body)
		if code != want {
			t.Errorf("/encode at %s with %v: %d %q, want %d", url, hdr, code, text, want)
		}
		if want == http.StatusForbidden && !strings.Contains(text, "/encode is for an authenticated caller") {
			t.Errorf("/encode refused with %q, want it to say who may encode", text)
		}
		if code != http.StatusOK {
			oneLineText(t, "/encode", text)
		}
		if code, text := request(t, url+"/decode", http.MethodPost, hdr, body); code != http.StatusOK {
			t.Errorf("/decode at %s with %v: %d %q, want 200", url, hdr, code, text)
		}
	}
	srv, _, _ := setup(t, "", 0)
	open(srv.URL, map[string]string{"Origin": origin}, http.StatusOK)
	open(srv.URL, map[string]string{}, http.StatusForbidden)
	// No payloads seal nothing: the temporal CLI sends {} for a query
	// without input, and anyone gets it back.
	for _, empty := range []string{`{}`, `{"payloads":[]}`} {
		if code, text := request(t, srv.URL+"/encode", http.MethodPost, nil, []byte(empty)); code != http.StatusOK {
			t.Errorf("/encode of %s without a credential: %d %q, want 200", empty, code, text)
		}
	}
	open(srv.URL, map[string]string{"Authorization": "Bearer anything"}, http.StatusForbidden)

	star := serve(t, Options{Origins: []string{"*"}})
	open(star.URL, map[string]string{"Origin": "http://any.example"}, http.StatusForbidden)

	// A handler told it listens beyond loopback (the main refuses to
	// start so without a token; the handler holds the rule too).
	wide := serve(t, Options{Origins: []string{origin}, Addr: "0.0.0.0:8234", Hosts: []string{"127.0.0.1"}})
	open(wide.URL, map[string]string{"Origin": origin}, http.StatusForbidden)

	tok, _, _ := setup(t, "s3cret", 0)
	open(tok.URL, map[string]string{"Authorization": "Bearer s3cret"}, http.StatusOK)
	if code, text := request(t, tok.URL+"/encode", http.MethodPost, map[string]string{"Origin": origin}, body); code != http.StatusUnauthorized {
		t.Errorf("/encode from the UI's origin without the token configured: %d %q, want 401", code, text)
	}
}

// TestCheckListen: a listen address beyond loopback without a token is
// refused, in one line naming both settings; loopback, or a token, is not.
func TestCheckListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8234", ":8234", "[::]:8234", "10.1.2.3:8234", "codec.internal:8234"} {
		err := CheckListen(addr, "")
		if err == nil || !strings.Contains(err.Error(), "AGENTRUN_CODEC_ADDR="+addr) || !strings.Contains(err.Error(), "AGENTRUN_CODEC_TOKEN") {
			t.Errorf("CheckListen(%q, \"\"): %v, want a refusal naming AGENTRUN_CODEC_ADDR and AGENTRUN_CODEC_TOKEN", addr, err)
		}
		if err := CheckListen(addr, "t0k"); err != nil {
			t.Errorf("CheckListen(%q, token): %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:8234", "127.0.0.2:0", "localhost:8234", "[::1]:8234"} {
		if err := CheckListen(addr, ""); err != nil {
			t.Errorf("CheckListen(%q, \"\"): %v, want nil", addr, err)
		}
	}
}
