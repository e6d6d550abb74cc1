// Package codec encrypts the payloads agentrun's Temporal clients and
// workers send, so that a run's history on the cluster (prompts, answers,
// tool arguments and results, operator messages, failure messages and
// stack traces) is not readable there without agentrun's keys.
//
// It lives at the module's top level, beside content, journal and streams,
// because its wire format is a contract with programs that are not ours:
// a codec server for the Web UI and the temporal CLI, a TypeScript
// subscriber of a run's stream. The format below is the whole contract.
//
// # Keys
//
// A [Key] is an id (letters, digits, '_', '-' and '.', at most 64
// characters) and 32 random bytes (AES-256). A [Codec] holds one or more:
// it encrypts with the first and decrypts with whichever key a payload
// names, so keys rotate by putting the new key first and keeping the old
// ones until no history needs them. [ParseKeys] reads the form of
// AGENTRUN_CODEC_KEYS ("id1:BASE64,id2:BASE64"), [ParseKeyFile] the form
// of the file AGENTRUN_CODEC_KEY_FILE names (one "id:BASE64" a line; blank
// lines and lines starting with '#' are skipped). BASE64 is standard
// base64 with padding of exactly 32 bytes, e.g. the output of
// `openssl rand -base64 32`. Errors name the key id, never a key's bytes.
//
// # Format
//
// Encode turns each payload P into a payload E with the metadata
//
//	encoding:          binary/encrypted
//	encryption-key-id: the id of the Codec's first key
//	encryption-cipher: AES256GCM-ZLIB-V1
//
// and the data
//
//	nonce (12 random bytes) || AES-256-GCM-Seal(key, nonce, zlib(proto(P)), aad = key id)
//
// where proto(P) is P (its metadata and data) in the protobuf binary
// encoding of temporal.api.common.v1.Payload, zlib(x) is x compressed in
// the zlib format (RFC 1950), and the GCM tag (16 bytes) ends the
// ciphertext, as Go's crypto/cipher and WebCrypto's AES-GCM both write it.
// The key id is the additional authenticated data, so a payload whose
// key-id metadata was changed fails to decrypt instead of decrypting under
// another key. A decoder reverses the steps: split off the nonce, open
// with the named key, inflate, unmarshal the Payload. The same format in
// JavaScript, a PayloadCodec for the TypeScript sdk, is
// streams/testdata/ts/codec.js; docs/privacy.md gives a test vector, and
// the streams tests check the two decode each other's payloads.
//
// Decode leaves a payload whose encoding is not binary/encrypted as it is:
// histories recorded without a codec (the committed test histories,
// signals sent with the plain temporal CLI) still replay and still read.
// An encrypted payload decodes or fails with a clear error, never as
// garbage: an unknown key id is an [*UnknownKeyError] naming the id, and a
// payload that does not open under its key (a wrong key under a known id,
// or damaged bytes) is [ErrAuth].
//
// # Blobs
//
// The Codec is also a content.Sealer: with a key set, the content store
// keeps blobs (values kept by reference, conversations) sealed. A sealed
// blob of plaintext B with content address A (content.KeyOf(B)) is
//
//	"agentrun-sealed-blob-v1\n" || len(id) (1 byte) || id || nonce (12 bytes) ||
//	    AES-256-GCM-Seal(key, nonce, zlib(B), aad = A)
//
// where nonce is the first 12 bytes of HMAC-SHA256(N, A) and N is
// HMAC-SHA256(key, "agentrun content nonce"). The nonce is a function of
// the key and the plaintext, so one blob seals to the same bytes each time
// (stores compare bytes to skip a rewrite) and no nonce is used with two
// plaintexts. The address as AAD binds the bytes to their key: a blob
// copied under another address fails to open.
//
// A journal record's content is sealed the same way (SealRecord), except
// that the nonce is 12 random bytes and the AAD names the record's run and
// position (journal/doc.go gives the record form): a record can be written
// again with other content at one position (after a torn tail), so a
// derived nonce could repeat.
//
// # What stays visible
//
// The codec encrypts payloads only. Temporal still sees, in plain text:
// workflow and run ids, task queue names, search attribute values
// (AgentRunStatus, AgentRunStep), workflow, activity, signal, query and
// update names, activity ids (agentrun's step names, such as
// tool/2/0/create_ticket), failure types (Indeterminate, ...), timings,
// attempts and the sizes of the encrypted payloads. docs/privacy.md says
// the same for operators.
package codec
