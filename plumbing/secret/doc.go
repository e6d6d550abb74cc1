// Package secret keeps the worker's secret values out of the text that
// leaves it. Text from tools, MCP servers' stderr and model providers can
// reach errors, the run's history and logs; every place where it does
// passes it through Scrub (or Err), which replaces each secret value with
// "[redacted]", raw or in the common encodings of it:
//
//   - inside a JSON string as Go's encoder writes it (<, >, & as \u003c…),
//     without the HTML escaping, with / as \/, and with every character
//     outside ASCII as a \u escape;
//   - percent-encoded as a URL query or path escapes it (space as + or
//     %20), with upper- or lower-case hex digits;
//   - HTML-escaped as html.EscapeString writes it, with &quot; and &#x27;
//     for the quotes, and with decimal references (&#60;) throughout;
//   - in standard or URL base64, with or without padding, alone or inside
//     a longer base64 value: there the characters that hold only the
//     value's bits are found at each of the three offsets it can start at
//     within a group of three bytes; the one or two characters at each end
//     that it shares with its neighbours stay, so they leak at most 8
//     bits of it.
//
// Not caught: a value split across lines (base64 wrapped at 76 columns,
// as PEM is), encoded twice (base64 of JSON of it), hex-encoded (except
// the codec's keys, whose hex forms are added as values of their own),
// compressed or encrypted.
//
// The secrets are the values of the worker's own credentials, taken from
// its environment at first use (FromEnviron: the provider keys, Temporal's
// API key and TLS key data, the password in AGENTRUN_JOURNAL, and any
// variable whose name says it holds a key, token, secret or password),
// the values the tools file gives its servers (header values, and the
// environment values whose names say so), which package tools adds when it
// opens them, the codec's keys (package internal/config adds each key's
// base64, bytes and hex) and the material of every key file read through
// ReadKeyFile (the codec's key file, the TLS client key), as well as the
// Temporal profile's API key and inline TLS key.
//
// ReadKeyFile is the one reader of key files: like ssh with a private key,
// it refuses a file whose mode lets group or others at it (*FileModeError:
// the programs exit 2 with its one line). Values shorter than MinLen are not secrets: replacing them
// would mangle ordinary text.
//
// Scrubbing is a last line: the worker's first defence is not to hand its
// secrets out (MCP servers start with a minimal environment; headers are
// not sent to another host after a redirect).
package secret
