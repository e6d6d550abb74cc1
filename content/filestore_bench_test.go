package content_test

import (
	"encoding/binary"
	"testing"

	"github.com/agentrun/agentrun/content"
)

// BenchmarkFileStorePut puts distinct 4 KiB blobs (a large tool result),
// each written, fsynced, renamed and its directory fsynced. The first Puts
// into each of the 256 shards also fsync the store's directory.
func BenchmarkFileStorePut(b *testing.B) {
	s, err := content.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 4<<10)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	b.SetBytes(int64(len(data)))
	var n uint64
	for b.Loop() {
		n++
		binary.LittleEndian.PutUint64(data, n) // a new key each time
		if _, err := s.Put(b.Context(), data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileStorePutExisting puts the same 4 KiB blob again: the file is
// read and compared, and the shard directory fsynced; nothing is written.
func BenchmarkFileStorePutExisting(b *testing.B) {
	s, err := content.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 4<<10)
	if _, err := s.Put(b.Context(), data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Put(b.Context(), data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileStoreGet reads and checks a 4 KiB blob.
func BenchmarkFileStoreGet(b *testing.B) {
	s, err := content.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	key, err := s.Put(b.Context(), make([]byte, 4<<10))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4 << 10)
	for b.Loop() {
		if _, err := s.Get(b.Context(), key); err != nil {
			b.Fatal(err)
		}
	}
}
