package netfault

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestCutHeal: bytes go through the proxy, a cut closes the open
// connection and refuses new ones, a heal accepts them again on the same
// address.
func TestCutHeal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server, one line per connection at a time
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p, err := Start("echo", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addr := p.Addr()
	echo := func(c net.Conn) error {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		got, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && got != "ping\n" {
			t.Fatalf("echo %q, want ping", got)
		}
		return err
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if err := echo(c); err == nil {
		t.Fatal("the open connection still echoes after the cut")
	}
	if c2, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c2.Close()
		t.Fatal("a new connection was accepted after the cut")
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("address after the heal %s, want %s", p.Addr(), addr)
	}
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial after the heal: %v", err)
	}
	defer c3.Close()
	if err := echo(c3); err != nil {
		t.Fatalf("through the healed proxy: %v", err)
	}
}
