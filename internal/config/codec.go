package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/plumbing/secret"
)

// The payload codec's keys: AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE.

// parseCodec reads the encryption keys of AGENTRUN_CODEC_KEYS or the file
// AGENTRUN_CODEC_KEY_FILE names; neither set, the codec is off (nil).
func parseCodec(e env) (*codec.Codec, error) {
	inline, file := strings.TrimSpace(e.get("AGENTRUN_CODEC_KEYS")), strings.TrimSpace(e.get("AGENTRUN_CODEC_KEY_FILE"))
	var name string
	var keys []codec.Key
	var err error
	switch {
	case inline == "" && file == "":
		return nil, nil
	case inline != "" && file != "":
		return nil, errors.New("AGENTRUN_CODEC_KEYS and AGENTRUN_CODEC_KEY_FILE are both set: set one (the keys, or the file that holds them)")
	case inline != "":
		name = "AGENTRUN_CODEC_KEYS"
		keys, err = codec.ParseKeys(inline)
	default:
		name = "AGENTRUN_CODEC_KEY_FILE"
		b, rerr := secret.ReadKeyFile(name, file)
		if rerr != nil {
			return nil, rerr
		}
		if keys, err = codec.ParseKeyFile(b); err != nil {
			err = fmt.Errorf("%s: %w", file, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	secret.Add(codecKeyForms(keys)...)
	c, err := codec.New(keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// codecKeyForms are the texts the codec's keys may show up as: each key's
// bytes, their base64 (as the settings write it) and their hex. The
// scrubber (package plumbing/secret) adds the other encodings of each.
func codecKeyForms(keys []codec.Key) []string {
	var out []string
	for _, k := range keys {
		h := hex.EncodeToString(k.Bytes)
		out = append(out, string(k.Bytes), base64.StdEncoding.EncodeToString(k.Bytes), h, strings.ToUpper(h))
	}
	return out
}
