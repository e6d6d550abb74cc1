// @ts-check
// agentrun's payload codec (Go package codec) for the TypeScript SDK: a
// PayloadCodec (@temporalio/common) that reads and writes exactly what
// agentrun's Go programs do, so that a TypeScript client (stream.js) can
// subscribe to, query or signal a run whose payloads are encrypted. It uses
// node's crypto (AES-256-GCM) and zlib only; the format is docs/privacy.md's
// "The codec's wire format" and codec/doc.go's "Format":
//
//   metadata  encoding: binary/encrypted
//             encryption-key-id: KEY_ID
//             encryption-cipher: AES256GCM-ZLIB-V1
//   data      nonce (12 bytes) || ciphertext || tag (16 bytes)
//
// where ciphertext || tag is AES-256-GCM under the key KEY_ID names, with
// KEY_ID's UTF-8 bytes as the additional authenticated data, of the zlib
// stream (RFC 1950) of the original Payload's protobuf serialization
// (temporal.api.common.v1.Payload: its metadata and data).
//
// Keys come as in Go: AGENTRUN_CODEC_KEYS="id1:BASE64,id2:BASE64" or a file
// AGENTRUN_CODEC_KEY_FILE names (one "id:BASE64" a line, '#' comments), not
// both; BASE64 is standard padded base64 of 32 bytes. Encode uses the first
// key, decode whichever key a payload names. A payload whose encoding is not
// binary/encrypted passes through both ways unchanged. An encrypted payload
// decodes or throws, never returns garbage: UnknownKeyError names a key id
// the codec lacks (also with no keys at all), AuthError a payload that does
// not open under its key (a wrong key under a known id, damaged bytes, or a
// key id changed in the metadata).
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const zlib = require('node:zlib');
const { temporal } = require('@temporalio/proto');

/** @typedef {import('@temporalio/common').Payload} Payload */
/** @typedef {import('@temporalio/common').PayloadCodec} PayloadCodec */
/** @typedef {{ id: string, bytes: Buffer }} Key */

const ProtoPayload = temporal.api.common.v1.Payload;

/** The encoding of an encrypted payload. */
const ENCODING = 'binary/encrypted';
/** The metadata key naming the key a payload was encrypted with. */
const METADATA_KEY_ID = 'encryption-key-id';
/** The metadata key naming the format, CIPHER. */
const METADATA_CIPHER = 'encryption-cipher';
/** The one format agentrun writes and reads. */
const CIPHER = 'AES256GCM-ZLIB-V1';
const KEY_SIZE = 32;
const NONCE_SIZE = 12;
const TAG_SIZE = 16;
/** Bounds a decrypted payload's inflated size, as the Go codec does. */
const MAX_PLAIN = 256 << 20;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const KEY_VARS = 'AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE';

/** An encrypted payload under a key id the codec does not hold. */
class UnknownKeyError extends Error {
  /** @param {string} id @param {string[]} have */
  constructor(id, have) {
    super(
      have.length === 0
        ? `payload encrypted under key id ${JSON.stringify(id)}, and no keys are configured: set that key (${KEY_VARS})`
        : `payload encrypted under key id ${JSON.stringify(id)}, which is not among the configured keys (${have.join(', ')}): add that key (${KEY_VARS})`,
    );
    this.name = 'UnknownKeyError';
    this.keyId = id;
  }
}

/** An encrypted payload that does not open under the key it names. */
class AuthError extends Error {
  /** @param {string} id */
  constructor(id) {
    super(`decrypt payload under key id ${JSON.stringify(id)}: payload does not decrypt: wrong key for its key id, or damaged bytes`);
    this.name = 'AuthError';
    this.keyId = id;
  }
}

/** @param {string} id */
function checkID(id) {
  if (!KEY_ID.test(id)) throw new Error(`key id ${JSON.stringify(id)}: want 1 to 64 letters, digits, '_', '-' or '.'`);
}

/**
 * Reads one "id:BASE64", never echoing the key's text.
 * @param {string} entry
 * @returns {Key}
 */
function parseKey(entry) {
  const i = entry.indexOf(':');
  if (i < 0) throw new Error(`an entry without ':': want "id:BASE64", BASE64 being 32 bytes in standard base64`);
  const id = entry.slice(0, i).trim();
  const b64 = entry.slice(i + 1).trim();
  checkID(id);
  const bytes = Buffer.from(b64, 'base64');
  // node's decoder skips what is not base64: insist on the canonical form.
  if (bytes.toString('base64') !== b64) {
    throw new Error(`key ${JSON.stringify(id)} is not standard base64: want 32 bytes in standard base64, e.g. from \`openssl rand -base64 32\``);
  }
  if (bytes.length !== KEY_SIZE) {
    throw new Error(`key ${JSON.stringify(id)} is ${bytes.length} bytes after base64 decoding, want ${KEY_SIZE} (AES-256): make one with \`openssl rand -base64 32\``);
  }
  return { id, bytes };
}

/**
 * Reads keys in the form "id1:BASE64,id2:BASE64", in order.
 * @param {string} s
 * @returns {Key[]}
 */
function parseKeys(s) {
  return s.split(',').map((entry) => {
    entry = entry.trim();
    if (entry === '') throw new Error('an empty entry: want "id1:BASE64,id2:BASE64"');
    return parseKey(entry);
  });
}

/**
 * Reads a key file's contents: one "id:BASE64" a line, in order; blank
 * lines and lines starting with '#' are skipped.
 * @param {string} text
 * @returns {Key[]}
 */
function parseKeyFile(text) {
  /** @type {Key[]} */
  const keys = [];
  text.split('\n').forEach((line, i) => {
    line = line.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      keys.push(parseKey(line));
    } catch (err) {
      throw new Error(`line ${i + 1}: ${/** @type {Error} */ (err).message}`);
    }
  });
  if (keys.length === 0) throw new Error('no keys: want one "id:BASE64" a line');
  return keys;
}

/**
 * agentrun's codec: encrypts with its first key, decrypts with any. With
 * no keys it encrypts nothing and refuses encrypted payloads, naming their
 * key id (a client that was given no key reads plain runs and says why it
 * cannot read an encrypted one).
 * @implements {PayloadCodec}
 */
class AgentrunCodec {
  /** @param {Key[]} keys */
  constructor(keys) {
    /** @type {Map<string, Buffer>} */
    this.keys = new Map();
    for (const k of keys) {
      checkID(k.id);
      if (k.bytes.length !== KEY_SIZE) {
        throw new Error(`key ${JSON.stringify(k.id)} is ${k.bytes.length} bytes, want ${KEY_SIZE} (AES-256): make one with \`openssl rand -base64 32\``);
      }
      if (this.keys.has(k.id)) throw new Error(`two keys have the id ${JSON.stringify(k.id)}: give each key its own id`);
      this.keys.set(k.id, k.bytes);
    }
    /** @type {string | undefined} */
    this.first = keys[0]?.id;
  }

  /** @param {Payload[]} payloads @returns {Promise<Payload[]>} */
  async encode(payloads) {
    return payloads.map((p) => this.encodeOne(p));
  }

  /** @param {Payload[]} payloads @returns {Promise<Payload[]>} */
  async decode(payloads) {
    return payloads.map((p) => this.decodeOne(p));
  }

  /**
   * Encrypts one payload under the first key; nonce (12 bytes) is random
   * unless given (test vectors only: never seal two payloads with one nonce).
   * @param {Payload} p
   * @param {Uint8Array} [nonce]
   * @returns {Payload}
   */
  encodeOne(p, nonce) {
    const id = this.first;
    if (id === undefined) return p;
    const key = /** @type {Buffer} */ (this.keys.get(id));
    const plain = ProtoPayload.encode({ metadata: p.metadata ?? {}, data: p.data ?? new Uint8Array() }).finish();
    const z = zlib.deflateSync(plain);
    const iv = nonce === undefined ? crypto.randomBytes(NONCE_SIZE) : Buffer.from(nonce);
    if (iv.length !== NONCE_SIZE) throw new Error(`nonce is ${iv.length} bytes, want ${NONCE_SIZE}`);
    const cipher = crypto.createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_SIZE });
    cipher.setAAD(Buffer.from(id, 'utf8'));
    const sealed = Buffer.concat([iv, cipher.update(z), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        encoding: Buffer.from(ENCODING),
        [METADATA_KEY_ID]: Buffer.from(id),
        [METADATA_CIPHER]: Buffer.from(CIPHER),
      },
      data: sealed,
    };
  }

  /**
   * Decrypts one payload if it is encrypted, or returns it as it is.
   * @param {Payload} p
   * @returns {Payload}
   */
  decodeOne(p) {
    const md = p.metadata ?? {};
    if (text(md.encoding) !== ENCODING) return p;
    const id = text(md[METADATA_KEY_ID]);
    const cph = text(md[METADATA_CIPHER]);
    if (cph !== CIPHER) {
      throw new Error(`decrypt payload under key id ${JSON.stringify(id)}: cipher ${JSON.stringify(cph)}, want ${JSON.stringify(CIPHER)}`);
    }
    const key = this.keys.get(id);
    if (key === undefined) throw new UnknownKeyError(id, [...this.keys.keys()]);
    const data = Buffer.from(p.data ?? new Uint8Array());
    if (data.length < NONCE_SIZE + TAG_SIZE) throw new AuthError(id);
    let z;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_SIZE), { authTagLength: TAG_SIZE });
      decipher.setAAD(Buffer.from(id, 'utf8'));
      decipher.setAuthTag(data.subarray(data.length - TAG_SIZE));
      z = Buffer.concat([decipher.update(data.subarray(NONCE_SIZE, data.length - TAG_SIZE)), decipher.final()]);
    } catch {
      throw new AuthError(id);
    }
    let plain;
    try {
      plain = zlib.inflateSync(z, { maxOutputLength: MAX_PLAIN });
    } catch (err) {
      throw new Error(`decrypt payload under key id ${JSON.stringify(id)}: inflate: ${/** @type {Error} */ (err).message}`);
    }
    const out = ProtoPayload.decode(plain);
    return { metadata: out.metadata ?? {}, data: out.data };
  }
}

/** @param {Uint8Array | null | undefined} b */
function text(b) {
  return b == null ? '' : Buffer.from(b).toString('utf8');
}

/**
 * The codec of the environment's keys (AGENTRUN_CODEC_KEYS, or the file
 * AGENTRUN_CODEC_KEY_FILE names; not both), or a codec without keys when
 * neither is set. Errors name the variable, never a key.
 * @param {Record<string, string | undefined>} env
 * @returns {AgentrunCodec}
 */
function codecFromEnv(env) {
  const inline = env.AGENTRUN_CODEC_KEYS ?? '';
  const file = env.AGENTRUN_CODEC_KEY_FILE ?? '';
  if (inline !== '' && file !== '') {
    throw new Error('AGENTRUN_CODEC_KEYS and AGENTRUN_CODEC_KEY_FILE are both set: set one');
  }
  try {
    if (inline !== '') return new AgentrunCodec(parseKeys(inline));
  } catch (err) {
    throw new Error(`AGENTRUN_CODEC_KEYS: ${/** @type {Error} */ (err).message}`);
  }
  try {
    if (file !== '') return new AgentrunCodec(parseKeyFile(fs.readFileSync(file, 'utf8')));
  } catch (err) {
    throw new Error(`AGENTRUN_CODEC_KEY_FILE ${file}: ${/** @type {Error} */ (err).message}`);
  }
  return new AgentrunCodec([]);
}

module.exports = {
  AgentrunCodec,
  AuthError,
  UnknownKeyError,
  codecFromEnv,
  parseKeyFile,
  parseKeys,
  ENCODING,
  METADATA_KEY_ID,
  METADATA_CIPHER,
  CIPHER,
};
