package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// memory is what this process holds at one point: its resident set, and
// the Go runtime's heap and goroutine stacks in use after a collection.
type memory struct {
	rss  float64 // VmRSS, bytes, read before the collection
	heap float64 // runtime.MemStats.HeapInuse after it
	// live is runtime.MemStats.HeapAlloc after it: the bytes of the
	// objects that survived it; heap also holds the free room in the spans
	// they are in.
	live   float64
	stacks float64 // runtime.MemStats.StackInuse after it
	// goroutines is runtime.NumGoroutine: a parked run's workflow
	// coroutines are goroutines.
	goroutines float64
}

// heapProfileRate is the heap profile's sampling rate with -memprofile
// (runtime.MemProfileRate; the default samples one allocation per 512 KiB,
// too coarse to split a parked run's 30-odd KB between its owners).
const heapProfileRate = 4096

// measureMemory reads this process's VmRSS, then collects and reads the
// heap and stacks in use. When profile is not "", it also writes a heap
// profile (as of that collection) there, for go tool pprof.
func measureMemory(profile string) (memory, error) {
	var m memory
	var err error
	if m.rss, err = selfRSS(); err != nil {
		return m, err
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.heap, m.live, m.stacks = float64(ms.HeapInuse), float64(ms.HeapAlloc), float64(ms.StackInuse)
	m.goroutines = float64(runtime.NumGoroutine())
	if profile == "" {
		return m, nil
	}
	if err := writeProfile("heap", profile+".pprof", 0); err != nil {
		return m, err
	}
	// The goroutines, counted by where they wait (text).
	return m, writeProfile("goroutine", profile+".goroutines.txt", 1)
}

// writeProfile writes the runtime profile named name to path.
func writeProfile(name, path string, debug int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		f.Close()
		return fmt.Errorf("%s profile: %w", name, err)
	}
	return f.Close()
}

// selfRSS returns this process's resident set (VmRSS) in bytes.
func selfRSS() (float64, error) { return vmRSS("/proc/self/status") }
