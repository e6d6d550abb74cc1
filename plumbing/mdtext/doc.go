// Package mdtext puts untrusted text (model answers, tool values and
// arguments, names, reasons and errors) into markdown as text, so that it
// never becomes markup where markdown is rendered (the Temporal Web UI's
// current details, which also pass raw HTML through).
//
// Three forms, one rule: whatever the text holds, it renders as the same
// characters and nothing else.
//   - Block puts it in a fenced code block whose fence is longer than any
//     run of backticks in it, so that nothing in it can close the block.
//   - Code puts it on one line in a code span whose backtick run is longer
//     than any run in it (names, ids, commands).
//   - Text escapes it on one line for running prose: a backslash before
//     each ASCII punctuation character that could begin markup (CommonMark's
//     escapes, as far as the Web UI's renderer, gomarkdown, knows them), so
//     no emphasis, heading, list, table, link, autolink (the ":" of a URL is escaped),
//     entity or HTML tag can start; a word of "=" only gets an entity.
//
// Code and Text fold line breaks and other control characters to spaces:
// a line break would let the text begin a block (a heading, a quote) of
// its own.
package mdtext
