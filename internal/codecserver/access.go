package codecserver

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// loopbackNames are the Host names a request may use for a loopback
// listen address, with its port.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// IsLoopback says whether addr (HOST:PORT) is a loopback address: its host
// is localhost or a loopback IP (127.0.0.0/8, ::1). An empty host, an
// unspecified address (0.0.0.0, ::) or any other name is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen refuses a listen address beyond loopback without a token:
// there, anyone who reaches the port could decrypt, so a credential is
// required.
func CheckListen(addr, token string) error {
	if token == "" && !IsLoopback(addr) {
		return fmt.Errorf("AGENTRUN_CODEC_ADDR=%s is beyond loopback and AGENTRUN_CODEC_TOKEN is unset: set a token (requests then need Authorization: Bearer TOKEN) or listen on 127.0.0.1", addr)
	}
	return nil
}

// splitHost is a Host header's name (lower case, IPv6 without brackets)
// and port ("80" when it names none: the server speaks plain HTTP).
func splitHost(hostport string) (name, port string) {
	hostport = strings.ToLower(hostport)
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "80"
}

// hostEntry is an entry of Hosts' name (as splitHost gives it) and port,
// "" when it names none: any port.
func hostEntry(e string) (name, port string) {
	if n, p, err := net.SplitHostPort(e); err == nil {
		return strings.ToLower(n), p
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")), ""
}

// hostAdmitted says whether a request's Host header names this server:
// its listen address, a loopback name with its port, or one of Hosts.
func (h *handler) hostAdmitted(host string) bool {
	name, port := splitHost(host)
	if host == "" {
		return false
	}
	listenName, listenPort := "", ""
	if h.o.Addr != "" {
		listenName, listenPort = splitHost(h.o.Addr)
		if name == listenName && port == listenPort {
			return true
		}
	}
	if h.loopback && slices.Contains(loopbackNames, name) && (listenPort == "" || port == listenPort) {
		return true
	}
	for _, e := range h.o.Hosts {
		n, p := hostEntry(e)
		if n == name && (p == "" || p == port) {
			return true
		}
	}
	return false
}

// hostRefusal is the one line refusing Host header host.
func (h *handler) hostRefusal(host string) string {
	admitted := []string{}
	if h.o.Addr != "" {
		admitted = append(admitted, h.o.Addr)
	}
	if h.loopback {
		_, port := splitHost(h.o.Addr)
		if h.o.Addr == "" {
			port = "PORT"
		}
		admitted = append(admitted, "localhost:"+port, "127.0.0.1:"+port, "[::1]:"+port)
	}
	admitted = append(admitted, h.o.Hosts...)
	return fmt.Sprintf("Host %q is not this server's: it answers to %s (more with AGENTRUN_CODEC_HOSTS)", oneLine(host), strings.Join(admitted, ", "))
}

// originAdmitted says whether Origin header origin is one of Origins (or
// they hold "*").
func (h *handler) originAdmitted(origin string) bool {
	return slices.Contains(h.o.Origins, "*") || h.originNamed(origin)
}

// originNamed says whether origin is one of Origins by name, not by "*".
func (h *handler) originNamed(origin string) bool {
	return slices.Contains(h.o.Origins, strings.TrimRight(origin, "/"))
}

// tokenPresented says whether r carries Authorization: Bearer Token.
func (h *handler) tokenPresented(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.o.Token)) == 1
}

// mayEncode says whether a request from origin (its Origin header, "" for
// none) that passed the other checks may use /encode: with a token
// configured it presented it (every request does); without one, the
// server listens on loopback and origin is a Web UI origin named in
// Origins (not admitted by "*"): the UI's own page, which a page of
// another origin cannot pose as, and which has no way to send a token.
func (h *handler) mayEncode(origin string) bool {
	if h.o.Token != "" {
		return true
	}
	return h.loopback && origin != "" && h.originNamed(origin)
}
