package providerfake

import (
	"crypto/sha256"
	"time"
)

// segment is one piece of a prompt in the order the provider caches it
// (tools, then system, then messages), as canonical JSON with any
// cache_control marker taken out; breakpoint reports whether the request
// marked it with cache_control (Anthropic).
type segment struct {
	json       []byte
	breakpoint bool
}

// prefixes returns, for each segment, the chained hash of the prompt up to
// and including it (seeded with the provider and model: neither provider
// shares a cache across models) and the tokens of that prefix.
func prefixes(seed string, segs []segment) ([][32]byte, []int64) {
	hashes := make([][32]byte, len(segs))
	toks := make([]int64, len(segs))
	h := sha256.Sum256([]byte(seed))
	var bytes int64
	for i, s := range segs {
		h = sha256.Sum256(append(h[:], s.json...))
		bytes += int64(len(s.json))
		hashes[i], toks[i] = h, estimate(bytes)
	}
	return hashes, toks
}

// estimate is the fake's tokenizer: a token per 4 bytes, rounded up.
func estimate(bytes int64) int64 { return (bytes + 3) / 4 }

// prefixCache remembers prompt prefixes by hash until ttl after their last
// use. Not safe for concurrent use (the Server holds its lock).
type prefixCache struct {
	ttl     time.Duration
	entries map[[32]byte]time.Time // hash -> expiry
}

// hit reports whether h is cached at now, and refreshes it when it is.
func (c *prefixCache) hit(h [32]byte, now time.Time) bool {
	exp, ok := c.entries[h]
	if !ok || !now.Before(exp) {
		delete(c.entries, h)
		return false
	}
	c.entries[h] = now.Add(c.ttl)
	return true
}

func (c *prefixCache) put(h [32]byte, now time.Time) {
	if c.entries == nil {
		c.entries = map[[32]byte]time.Time{}
	}
	if len(c.entries) > 100000 { // a long bench: drop the expired
		for k, exp := range c.entries {
			if !now.Before(exp) {
				delete(c.entries, k)
			}
		}
	}
	c.entries[h] = now.Add(c.ttl)
}

// openAICached is OpenAI's rule: the longest prefix seen before, counted
// when it is at least min tokens long, rounded down to a multiple of 128.
// Every prefix of the prompt is remembered.
func (c *prefixCache) openAICached(hashes [][32]byte, toks []int64, min int64, now time.Time) int64 {
	var cached int64
	for i := len(hashes) - 1; i >= 0; i-- {
		if c.hit(hashes[i], now) {
			if toks[i] >= min {
				cached = toks[i] / 128 * 128
			}
			break
		}
	}
	for _, h := range hashes {
		c.put(h, now)
	}
	return cached
}

// lookback is how many block boundaries before a breakpoint Anthropic
// checks for a cached prefix (its documentation says about 20).
const lookback = 20

// anthropicCached is Anthropic's rule: only the prefixes that end at a
// cache_control breakpoint, at least min tokens long, are written. A
// request reads the longest prefix written before that ends at one of its
// breakpoints or at one of the lookback boundaries before one (so a
// breakpoint that rolls forward with the conversation finds the last
// one); read is its tokens, written the tokens from there to the last
// breakpoint, now written.
func (c *prefixCache) anthropicCached(segs []segment, hashes [][32]byte, toks []int64, min int64, now time.Time) (read, written int64) {
	last := -1
	for i := len(segs) - 1; i >= 0 && read == 0; i-- {
		if !segs[i].breakpoint || toks[i] < min {
			continue
		}
		if last < 0 {
			last = i
		}
		for j := i; j >= 0 && j > i-lookback; j-- {
			if toks[j] >= min && c.hit(hashes[j], now) {
				read = toks[j]
				break
			}
		}
	}
	if last >= 0 {
		written = toks[last] - read
	}
	for i, s := range segs {
		if s.breakpoint && toks[i] >= min {
			c.put(hashes[i], now)
		}
	}
	return read, written
}
