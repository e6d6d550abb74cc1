// Package netfault cuts a process off from a server on purpose, for the
// crash campaign and the partition tests: a Proxy is a TCP proxy on
// 127.0.0.1 in front of one upstream address (the Temporal frontend,
// PostgreSQL), built on Shopify's toxiproxy server package, run in this
// process (no toxiproxy program, no API port). A process that is given
// the proxy's address instead of the upstream's talks through it.
//
// Cut disables the proxy: its listener closes, every connection through it
// is closed, and new connections are refused until Heal enables it again
// on the same port. The process behind it goes on running, as a worker
// does behind a network partition; its connections fail and it must
// reconnect after the heal.
package netfault
