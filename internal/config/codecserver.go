package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// The codec server's settings (program codecserver) and their parsing.

// CodecServer are the settings of the codec server (program codecserver),
// which the Temporal Web UI and CLI call to decode payloads.
type CodecServer struct {
	// Addr is where it listens, HOST:PORT (AGENTRUN_CODEC_ADDR). Default
	// DefaultCodecAddr: loopback only. An address beyond loopback needs
	// Token: the server refuses to start without one.
	Addr string
	// Origins are the Web UI origins it admits (AGENTRUN_CODEC_ORIGINS,
	// comma-separated, each scheme://host[:port], or "*" for any): a
	// request whose Origin header is another is refused (403); one
	// without an Origin (the CLI) is not a browser's and passes. Default
	// DefaultCodecOrigin, the dev server's UI.
	Origins []string
	// Hosts are the names, beyond its listen address and the loopback
	// names (localhost, 127.0.0.1, [::1], with its port), that a
	// request's Host header may hold (AGENTRUN_CODEC_HOSTS,
	// comma-separated, each HOST or HOST:PORT; a HOST alone admits any
	// port): another Host is refused (403), which stops a page that
	// rebinds its own name to this address. Default none: the listen
	// address and the loopback names only.
	Hosts []string
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN) and the one credential that opens
	// /encode to any caller (AGENTRUN_CODEC_TOKEN). Default "": no token
	// asked, which the server allows on a loopback address only.
	Token string
}

// validHost says whether h is HOST or HOST:PORT as a Host header holds
// it: a name or IPv4 address, or an IPv6 address in brackets.
func validHost(h string) bool {
	name := h
	if n, port, err := net.SplitHostPort(h); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
		name = n
		if strings.Contains(n, ":") {
			name = "[" + n + "]"
		}
	}
	if inner, ok := strings.CutPrefix(name, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		return ok && net.ParseIP(inner) != nil && strings.Contains(inner, ":")
	}
	return name != "" && !strings.ContainsAny(name, "/@?#[]: \t")
}

// The codec server's defaults.
const (
	DefaultCodecAddr   = "127.0.0.1:8234"
	DefaultCodecOrigin = "http://localhost:8233"
)

func parseCodecServer(e env) (CodecServer, error) {
	s := CodecServer{
		Addr:  cmp.Or(strings.TrimSpace(e.get("AGENTRUN_CODEC_ADDR")), DefaultCodecAddr),
		Token: strings.TrimSpace(e.get("AGENTRUN_CODEC_TOKEN")),
	}
	if _, port, err := net.SplitHostPort(s.Addr); err != nil || port == "" {
		return s, fmt.Errorf("AGENTRUN_CODEC_ADDR=%q is not a listen address: want HOST:PORT, e.g. 127.0.0.1:8234", s.Addr)
	}
	for o := range strings.SplitSeq(cmp.Or(strings.TrimSpace(e.get("AGENTRUN_CODEC_ORIGINS")), DefaultCodecOrigin), ",") {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
				return s, fmt.Errorf("AGENTRUN_CODEC_ORIGINS: %q is not an origin: want scheme://host[:port], e.g. %s, comma-separated, or *", o, DefaultCodecOrigin)
			}
		}
		s.Origins = append(s.Origins, o)
	}
	for h := range strings.SplitSeq(e.get("AGENTRUN_CODEC_HOSTS"), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h == "" {
			continue
		}
		if !validHost(h) {
			return s, fmt.Errorf("AGENTRUN_CODEC_HOSTS: %q is not a host name: want HOST or HOST:PORT (IPv6 as [ADDR] or [ADDR]:PORT), comma-separated, e.g. codec.internal,codec.internal:8234", h)
		}
		s.Hosts = append(s.Hosts, h)
	}
	if strings.ContainsAny(s.Token, " \t\r\n") {
		return s, errors.New("AGENTRUN_CODEC_TOKEN holds white space: want one token, sent as Authorization: Bearer TOKEN")
	}
	return s, nil
}
