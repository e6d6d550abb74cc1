package providerfake

import (
	"cmp"
	"fmt"
	"io"
	"time"
)

// Config configures a Server. Every field's zero value is its default.
type Config struct {
	// RPM is how many requests the whole fake answers within one Window,
	// all clients and both APIs together. Default 0: 60.
	RPM int
	// TPM is how many tokens (estimated input plus output, see the
	// package doc) the whole fake answers within one Window. Default 0:
	// 40,000.
	TPM int
	// Turns is how many tool results a conversation must hold before the
	// fake answers with text instead of another tool call. Default 0: 3.
	Turns int
	// MinCacheTokens is the shortest prefix, in tokens, either prompt
	// cache keeps (OpenAI's and Anthropic's minimum). Default 0: 1024.
	MinCacheTokens int
	// CacheTTL is how long a cached prefix lives after its last use (both
	// providers keep one about five minutes). Default 0: 5 minutes.
	CacheTTL time.Duration
	// Window is the sliding window the limits count over. Default 0: one
	// minute; tests may shorten it.
	Window time.Duration
	// Log receives one line per request when set. Default nil: no log.
	Log io.Writer
	// Now is the clock. Default nil: time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultRPM            = 60
	DefaultTPM            = 40000
	DefaultTurns          = 3
	DefaultMinCacheTokens = 1024
	DefaultCacheTTL       = 5 * time.Minute
	DefaultWindow         = time.Minute
)

func (c Config) withDefaults() Config {
	c.RPM = cmp.Or(c.RPM, DefaultRPM)
	c.TPM = cmp.Or(c.TPM, DefaultTPM)
	c.Turns = cmp.Or(c.Turns, DefaultTurns)
	c.MinCacheTokens = cmp.Or(c.MinCacheTokens, DefaultMinCacheTokens)
	c.CacheTTL = cmp.Or(c.CacheTTL, DefaultCacheTTL)
	c.Window = cmp.Or(c.Window, DefaultWindow)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.RPM < 0:
		return fmt.Errorf("rpm %d: want a positive number of requests per minute", c.RPM)
	case c.TPM < 0:
		return fmt.Errorf("tpm %d: want a positive number of tokens per minute", c.TPM)
	case c.Turns < 0:
		return fmt.Errorf("turns %d: want 1 or more tool results before the final answer", c.Turns)
	case c.MinCacheTokens < 0:
		return fmt.Errorf("min-cache %d: want a positive number of tokens", c.MinCacheTokens)
	case c.CacheTTL < 0:
		return fmt.Errorf("cache-ttl %v: want a positive duration, e.g. 5m", c.CacheTTL)
	case c.Window < 0:
		return fmt.Errorf("window %v: want a positive duration, e.g. 1m", c.Window)
	}
	return nil
}
