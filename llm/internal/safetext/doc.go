// Package safetext holds the text helpers that package llm and its
// providers share for messages a person reads: a URL without its password,
// whether a key is set (never the key), text cut on a rune boundary.
package safetext
