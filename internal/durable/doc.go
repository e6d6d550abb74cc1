// Package durable holds the file-system steps the durable stores share
// (the journal's FileStore and the content store's): creating a folder so
// that it survives a crash. Each store keeps its own fsync routine (and its
// fault seam); this package takes it as a function.
package durable
