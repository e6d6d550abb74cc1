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
// (BenchmarkEncode), so both are pooled and reset for each use. The
// writers compress at zlib's level 1 (BestSpeed): 2.5 times as fast as the
// default level on step-sized JSON, for a little less compression; any
// level decodes alike.
var (
	writers = sync.Pool{New: func() any {
		w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed) // a valid level: never an error
		return w
	}}
	readers sync.Pool // io.ReadCloser that are also zlib.Resetter
)

// compress returns plain compressed with zlib at level 1.
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

// inflate returns z decompressed, refusing more than max bytes (an error
// wrapping ErrTooBig).
func inflate(z []byte, max int) ([]byte, error) {
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
	plain, err := io.ReadAll(io.LimitReader(zr, int64(max)+1))
	if err == nil && len(plain) > max {
		err = fmt.Errorf("more than %d bytes: %w", max, ErrTooBig)
	}
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return plain, nil
}
