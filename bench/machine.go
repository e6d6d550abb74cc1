package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machine describes where the bench ran.
type machine struct {
	CPU      string
	Cores    int
	MemoryGB float64
	Go       string
	Kernel   string
	Date     time.Time
	// FS is the file system type of the bench's folder, e.g. ext4.
	FS string
	// FsyncFloor is the median time of a write of fsyncProbe bytes and an
	// fsync to a file in the bench's folder.
	FsyncFloor time.Duration
	// Load is the 1-minute load average at the start and at the end.
	LoadStart, LoadEnd string
}

// fsyncProbe is the size of the writes that measure the fsync floor.
const fsyncProbe = 64

func describeMachine(dir string, samples int) (machine, error) {
	m := machine{
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		MemoryGB:  memoryGB(),
		Go:        runtime.Version(),
		Kernel:    strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		Date:      time.Now().UTC(),
		FS:        fsType(dir),
		LoadStart: loadAverage(),
	}
	f, err := os.OpenFile(filepath.Join(dir, "fsync-floor"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return m, fmt.Errorf("fsync floor: %w", err)
	}
	defer f.Close()
	buf := make([]byte, fsyncProbe)
	var times []time.Duration
	for range samples {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return m, fmt.Errorf("fsync floor: %w", err)
		}
		if err := f.Sync(); err != nil {
			return m, fmt.Errorf("fsync floor: %w", err)
		}
		times = append(times, time.Since(start))
	}
	m.FsyncFloor = median(times)
	return m, nil
}

func (m machine) String() string {
	return fmt.Sprintf("%s, %d cores, %.1f GB memory, %s, Linux %s, %s; fsync floor %.2f ms (median write of %d B + fsync, %s); load average %s at the start, %s at the end",
		m.CPU, m.Cores, m.MemoryGB, m.Go, m.Kernel, m.Date.Format("2006-01-02 15:04 MST"),
		ms(m.FsyncFloor), fsyncProbe, m.FS, m.LoadStart, m.LoadEnd)
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memoryGB() float64 {
	for _, line := range strings.Split(readFile("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / (1 << 20)
		}
	}
	return 0
}

func loadAverage() string {
	if f := strings.Fields(readFile("/proc/loadavg")); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// fsType names the file system of dir, for the common Linux ones.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "file system unknown"
	}
	switch uint64(st.Type) {
	case 0xef53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683e:
		return "btrfs"
	case 0x01021994:
		return "tmpfs: fsync costs nothing here, the journal figures mean little"
	case 0x794c7630:
		return "overlayfs"
	}
	return fmt.Sprintf("file system 0x%x", uint64(st.Type))
}
