// Package durable holds the file-system steps the durable stores share
// (the journal's FileStore and the content store's): the file seam FS,
// through which both do their file I/O so that tests can inject faults
// (durabletest.FaultFS), the one routine that fsyncs a directory
// (SyncDir), and creating a folder so that it survives a crash
// (MkdirAll). A file is fsynced with its Sync method.
package durable
