// Package codecserver is the codec server that the Temporal Web UI and the
// temporal CLI (--codec-endpoint) call to read agentrun's runs: it serves
// POST /decode and POST /encode with the JSON payload list they send
// ({"payloads": [...]}, as the sdk's converter.NewPayloadCodecHTTPHandler
// reads and writes it).
//
// /decode decrypts with the keys agentrun's programs use (package codec)
// and then, in each payload that decrypted under a key, expands agentrun's
// references for display, only where its activities put them in their
// own results (envelope.go): the "content_ref" of a tool step's result
// (agent.ToolResult) and the message's "content_ref" and each tool call's
// "args_ref" of a model step's reply (agent.ModelReply, from the
// assistant), each recognised by its whole value (no field of another
// type). Such a reference (agent.Ref: key, size, preview) gets a
// "content" field holding the value the content store keeps under its
// key, as text, at most Limit bytes of it; a longer value is cut on a
// UTF-8 boundary and the object says so in "content_cut". A blob that is
// missing, damaged or not readable is never guessed: "content" is null
// and "content_error" says which ("missing: sha256:...", "damaged:
// ..."). A reference anywhere else is shown as it is: in a start input or
// a checkpoint, a signal or an update (a child's report), a query's
// answer, an activity's input (the workflow builds it from what it was
// told), a payload nested in a value, or deeper in any value. The worker
// seals those too, and a caller may have written them, naming another
// run's blob. With keys configured, a payload that is not encrypted is
// returned exactly as it came: anyone can write one naming any blob, so
// only what a key holder sealed is expanded. Without keys (plain runs)
// there is nothing to tell them apart by, and every tool result and model
// reply is expanded. /encode is the codec's exact inverse and expands
// nothing.
//
// Who it serves, request by request, in this order:
//
//   - The Host header must name the server: its listen address,
//     localhost, 127.0.0.1 or [::1] with its port (when it listens on
//     loopback), or a name of Options.Hosts (AGENTRUN_CODEC_HOSTS).
//     Another is 403: a page that rebinds its own name to this address
//     sends its own name.
//   - An Origin header, when present, must be one of Options.Origins
//     (AGENTRUN_CODEC_ORIGINS; "*" admits any): another is 403, the
//     preflight included. A request without one (the CLI, a program)
//     passes this check: a browser sends it with every call a page makes
//     here, and a page cannot choose it.
//   - Preflights (OPTIONS) from an admitted origin are answered (204) with
//     the headers the UI sends allowed: Authorization,
//     Authorization-Extras, Content-Type, X-Namespace.
//   - With Options.Token set, every other request must carry
//     "Authorization: Bearer TOKEN", else 401.
//   - /encode seals for an authenticated caller only, else 403: with a
//     token set, the token (which every request then carries); without
//     one, a request whose Origin is named in Options.Origins (not merely
//     admitted by "*") while the server listens on loopback: the Web UI's
//     own page, which sends a signal or an update through /encode and has
//     no way to send a static token. A program on the same host can send
//     that Origin header too: without a token, loopback is the boundary.
//     An /encode of no payloads seals nothing and is answered for anyone
//     who passed the checks above: the temporal CLI sends one ({}) for a
//     query without input.
//
// The Web UI (ui-server v2.42.1) sends Content-Type and X-Namespace on
// each call, and "Authorization: Bearer ACCESS_TOKEN" (plus
// Authorization-Extras: its ID token) only with codec.passAccessToken on
// (TEMPORAL_CODEC_PASS_ACCESS_TOKEN), only to an https endpoint and only
// its signed-in user's token, which this server cannot verify:
// codec.includeCredentials sends the browser's cookies for the codec
// server's site. X-Namespace is not read: one server holds one set of
// keys and one content store, whatever namespace the UI shows.
//
// Bounds: a body is at most 64 MiB and holds at most MaxPayloads (10,000)
// payloads, counted as it is read, so that a body of millions of empty
// payloads is refused before any is built; the encrypted payloads of one
// /decode, the nested ones included, inflate to at most MaxInflated
// together, and its answer holds at most MaxResponse, the expanded values
// included, counted as they are read; over any of them it is 413 with one
// line naming the bound. A body that is not a payload list, or a payload
// that does not decrypt, is 400 with one line.
//
// It is its own program (codecserver, a thin main over this package)
// rather than a mode of the worker or reconcile: it is a long-lived HTTP
// server that the UI's users reach, with its own address, origins and
// token, and it needs only the keys and read access to the content store,
// not the Temporal connection, the model or the tools; keeping it apart
// keeps that small surface apart too, and lets an operator run it on a
// laptop beside the UI while workers run elsewhere. The main refuses to
// listen beyond loopback without a token (CheckListen).
package codecserver
