package codec

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sync"
)

// A zlib writer allocates about 800 KB of state and a reader about 40 KB:
// made anew for every payload they cost more than the encryption itself
// (BenchmarkEncode), so both are pooled and reset for each use.
var (
	writers = sync.Pool{New: func() any { return zlib.NewWriter(nil) }}
	readers sync.Pool // io.ReadCloser that are also zlib.Resetter
)

// compress returns plain compressed with zlib at the default level.
func compress(plain []byte) ([]byte, error) {
	var z bytes.Buffer
	zw := writers.Get().(*zlib.Writer)
	defer writers.Put(zw)
	zw.Reset(&z)
	if _, err := zw.Write(plain); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	return z.Bytes(), nil
}

// inflate returns z decompressed, refusing more than maxPlain bytes.
func inflate(z []byte) ([]byte, error) {
	var zr io.ReadCloser
	if r, ok := readers.Get().(io.ReadCloser); ok {
		if err := r.(zlib.Resetter).Reset(bytes.NewReader(z), nil); err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		zr = r
	} else {
		r, err := zlib.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		zr = r
	}
	defer readers.Put(zr)
	plain, err := io.ReadAll(io.LimitReader(zr, maxPlain+1))
	if err == nil && len(plain) > maxPlain {
		err = fmt.Errorf("more than %d bytes", maxPlain)
	}
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return plain, nil
}
