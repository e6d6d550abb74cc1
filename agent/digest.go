package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// DigestFormat says what an arguments digest looks like, for error
// messages.
const DigestFormat = `"sha256:" followed by 16 lowercase hex digits, as reconcile show prints it`

// digestHex is how many hex digits of the SHA-256 a digest keeps.
const digestHex = 16

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{16}$`)

// ValidDigest reports whether d is a well-formed arguments digest.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// ArgsDigest is the digest of a tool call's arguments: "sha256:" and the
// first 16 hex digits of the SHA-256 of the arguments' bytes as recorded.
// Arguments kept by reference are the bytes the model gave, stored under
// their content key ("sha256:" and the 64 hex digits of the same hash,
// which the content store checks on every read), so the digest is the
// start of that key and needs no read; inline arguments are hashed as
// they are recorded. Either way it is the SHA-256 of the bytes that
// `reconcile show RUN --step MARKER` prints as the call's input.
//
// 64 bits are enough because the digest does not stand alone: an
// approval names the marker and, on Temporal, the run's first execution,
// and within one execution chain a marker's arguments are recorded once,
// with the model step that asked for them. The digest tells the arguments
// an operator looked at from whatever else could be pending at that
// marker when the approval arrives (a run reset or started again, a
// preview taken for the whole): a stale view passes by accident once in
// 2^64, and passing on purpose needs two colliding argument texts planted
// in the model's output before the operator looks plus a reset between
// the look and the approval. A digest is short enough to read and type.
func ArgsDigest(args json.RawMessage, ref *Ref) string {
	if ref != nil {
		if isContentKey(ref.Key) {
			return ref.Key[:len("sha256:")+digestHex]
		}
		// Not a content key: hash the reference itself, so that the
		// digest still names exactly what was recorded.
		b, _ := json.Marshal(ref)
		args = b
	}
	sum := sha256.Sum256(args)
	return "sha256:" + hex.EncodeToString(sum[:])[:digestHex]
}

// Digest returns the call's arguments digest (ArgsDigest).
func (c ToolCall) Digest() string { return ArgsDigest(c.Args, c.ArgsRef) }

// DigestMismatch is the refusal of a decision that names arguments other
// than those pending at marker: one line naming both digests and what to
// do.
func DigestMismatch(name, marker, given, pending string) string {
	return fmt.Sprintf("%s: marker %s has arguments %s pending, not %s as given; look again with reconcile show RUN --step %s and decide on what it shows", name, marker, pending, given, marker)
}

// isContentKey reports whether key has the form of a content store's key
// (package content's ValidKey): "sha256:" and 64 lowercase hex digits.
func isContentKey(key string) bool {
	h, ok := strings.CutPrefix(key, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
