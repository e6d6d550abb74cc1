package agent

import (
	"fmt"
	"strconv"
)

// Price is a model's price in US dollars per million tokens: input, output,
// and the input tokens read from and written to the provider's prompt
// cache (0: as input).
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Cost is what u's tokens cost at p, in US dollars.
func (p Price) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens
	return (float64(plain)*p.Input + float64(u.CacheReadTokens)*read + float64(u.CacheWriteTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
}

// FormatCost renders a cost for people: "$0.0123", to the hundredth of a
// cent.
func FormatCost(usd float64) string {
	return "$" + strconv.FormatFloat(usd, 'f', 4, 64)
}

// String renders the price on one line, e.g. "input $2.5, output $10 per
// million tokens".
func (p Price) String() string {
	s := fmt.Sprintf("input $%g, output $%g", p.Input, p.Output)
	if p.CacheRead != 0 {
		s += fmt.Sprintf(", cache read $%g", p.CacheRead)
	}
	if p.CacheWrite != 0 {
		s += fmt.Sprintf(", cache write $%g", p.CacheWrite)
	}
	return s + " per million tokens"
}
