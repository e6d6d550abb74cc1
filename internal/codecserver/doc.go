// Package codecserver is the codec server that the Temporal Web UI and the
// temporal CLI (--codec-endpoint) call to read agentrun's runs: it serves
// POST /decode and POST /encode with the JSON payload list they send
// ({"payloads": [...]}, the sdk's converter.NewPayloadCodecHTTPHandler
// underneath).
//
// /decode decrypts with the keys agentrun's programs use (package codec;
// payloads that are not encrypted pass as they are) and then expands
// agentrun's references for display: in a decoded JSON payload, each
// "content_ref" or "args_ref" object (agent.Ref: key, size, preview) gets
// a "content" field holding the value the content store keeps under its
// key, as text, at most Limit bytes of it; a longer value is cut on a
// UTF-8 boundary and the object says so in "content_cut". A blob that is
// missing, damaged or not readable is never guessed: "content" is null and
// "content_error" says which ("missing: sha256:...", "damaged: ...").
// /encode is the codec's exact inverse and expands nothing.
//
// The handler answers CORS preflights (OPTIONS) for the configured Web UI
// origins, allowing the Authorization, Content-Type and X-Namespace
// headers the UI sends; with a token configured, every other request
// without "Authorization: Bearer TOKEN" is 401. A body that is not a
// payload list is 400 with a one-line reason.
//
// It is its own program (codecserver, a thin main over this package)
// rather than a mode of the worker or reconcile: it is a long-lived HTTP
// server that the UI's users reach, with its own address, origins and
// token, and it needs only the keys and read access to the content store,
// not the Temporal connection, the model or the tools; keeping it apart
// keeps that small surface apart too, and lets an operator run it on a
// laptop beside the UI while workers run elsewhere.
package codecserver
