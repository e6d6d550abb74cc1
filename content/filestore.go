package content

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/agentrun/agentrun/plumbing/durable"
)

// FileStore is the durable Store: one file per blob, <dir>/<2 hex>/<62 hex>,
// in the format and under the crash assumptions described in the package
// documentation. Several processes may share one directory.
//
// It caches only which shard directories it has made durable, never blobs:
// every Get reads and checks the file. It is safe for concurrent use.
type FileStore struct {
	dir string
	fs  durable.FS // the file seam: tests inject faults through it
	// synced[i] is set once the entry of shard i (the directory named by the
	// first byte of the hash, in hex) in dir is known to be durable.
	synced [256]atomic.Bool
	// sealer, when not nil, encrypts blobs at rest.
	sealer Sealer
}

var _ Store = (*FileStore)(nil)

// File and directory permissions: blobs hold prompts and tool output.
const (
	filePerm = 0o600 // os.CreateTemp creates files with these
	dirPerm  = 0o700
)

// tempPattern names the temporary file of a Put; a key never maps to it.
const tempPattern = ".tmp-*"

// NewFileStore returns a store that keeps its blobs in dir. It creates dir
// and its missing parents, and fsyncs the parent of each directory it
// created so that the directories survive a crash.
func NewFileStore(dir string) (*FileStore, error) {
	return newFileStore(dir, durable.OS{})
}

// NewSealedFileStore is NewFileStore whose files hold blobs sealed by
// sealer (encrypted), when sealer is not nil. It reads blobs kept plain
// as well.
func NewSealedFileStore(dir string, sealer Sealer) (*FileStore, error) {
	s, err := newFileStore(dir, durable.OS{})
	if err != nil {
		return nil, err
	}
	s.sealer = sealer
	return s, nil
}

func newFileStore(dir string, fsys durable.FS) (*FileStore, error) {
	abs, err := durable.MkdirAll(dir, dirPerm, fsys.SyncDir)
	if err != nil {
		return nil, fmt.Errorf("content dir %s: %w", dir, err)
	}
	return &FileStore{dir: abs, fs: fsys}, nil
}

// path returns the shard directory and the file of a valid key.
func (s *FileStore) path(key string) (shard, file string) {
	h := key[len(keyPrefix):]
	shard = filepath.Join(s.dir, h[:2])
	return shard, filepath.Join(shard, h[2:])
}

// Put stores data and returns its key, once the blob is durable. If the
// blob's file already holds data, it writes nothing and only fsyncs the
// shard directory; otherwise it replaces the file (absent, torn or damaged)
// atomically. An error means the blob may or may not be stored; Get never
// returns other bytes than data for its key, and Put may be retried.
func (s *FileStore) Put(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	key := keyPrefix + hex.EncodeToString(sum[:])
	shard, path := s.path(key)
	if err := s.syncShard(sum[0], shard); err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	stored, err := seal(s.sealer, key, data)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	if !holds(path, stored) {
		if err := s.write(shard, path, stored); err != nil {
			return "", fmt.Errorf("put %s: %w", key, err)
		}
	}
	// Also when the file was there: whoever renamed it may not have fsynced
	// the directory yet (another process, or a Put that failed after the
	// rename), and this Put must not return nil for a blob a crash can undo.
	if err := s.fs.SyncDir(shard); err != nil {
		return "", fmt.Errorf("put %s: fsync dir %s: %w", key, shard, err)
	}
	return key, nil
}

// syncShard makes the entry of a shard directory in the store's directory
// durable, creating the shard if needed: once per shard per FileStore. It
// does so also for a shard that another process created, which may not have
// fsynced it yet.
func (s *FileStore) syncShard(i byte, shard string) error {
	if s.synced[i].Load() {
		return nil
	}
	if err := os.Mkdir(shard, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("fsync dir %s: %w", s.dir, err)
	}
	s.synced[i].Store(true)
	return nil
}

// holds reports whether the file at path holds exactly data. Any error
// reads as false: the caller then writes the file, and reports what fails.
func holds(path string, data []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close() // read only: a close error loses nothing
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() != int64(len(data)) {
		return false
	}
	// Compare in chunks: no second copy of a large blob in memory.
	buf := make([]byte, min(len(data), 64<<10))
	for rest := data; len(rest) > 0; {
		n, err := io.ReadFull(f, buf[:min(len(buf), len(rest))])
		if err != nil || !bytes.Equal(buf[:n], rest[:n]) {
			return false
		}
		rest = rest[n:]
	}
	return true
}

// write puts data into a new temporary file in shard, fsyncs and closes it,
// and renames it onto path. It removes the temporary file on failure.
func (s *FileStore) write(shard, path string, data []byte) (err error) {
	f, err := s.fs.CreateTemp(shard, tempPattern)
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()      // may be closed already; the error is err
			os.Remove(tmp) // may be renamed already; then nothing to remove
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := s.fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// Get returns the bytes stored under key after checking that they hash to
// it: ErrNotFound when there is no file, ErrDamaged when the file holds
// other bytes (a torn or damaged file is never returned).
func (s *FileStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, path := s.path(key)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return Unseal(s.sealer, key, path, data)
}
