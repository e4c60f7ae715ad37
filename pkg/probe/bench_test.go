package probe_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/server"
)

// Benchmarks (see the report for the figures):
//
//	go test -run '^$' -bench . -benchmem ./pkg/probe/
//	go test -run '^$' -bench RSS -benchtime 1x ./pkg/probe/

func scrape(b *testing.B, h http.Handler, path string, gzip bool) int {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("%s: HTTP %d", path, w.Code)
	}
	return w.Body.Len()
}

// BenchmarkScrape is one /metrics scrape served from the last snapshot (the common case:
// several scrapes per collection), as Prometheus asks for it (gzip) and uncompressed.
func BenchmarkScrape(b *testing.B) {
	for _, gpus := range []int{8, 64} {
		for _, gzip := range []bool{false, true} {
			b.Run(fmt.Sprintf("gpus=%d/gzip=%v", gpus, gzip), func(b *testing.B) {
				r := newRig(b, rigOptions{gpus: gpus, quiet: true})
				h := r.probe.Handler()
				size := scrape(b, h, "/metrics", gzip)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					scrape(b, h, "/metrics", gzip)
				}
				b.ReportMetric(float64(size), "bytes/scrape")
			})
		}
	}
}

// BenchmarkScrapeAfterCollection is the first scrape after a new snapshot, which renders
// the metrics before serving them (the collection itself is not timed).
func BenchmarkScrapeAfterCollection(b *testing.B) {
	for _, gpus := range []int{8, 64} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			r := newRig(b, rigOptions{gpus: gpus, quiet: true})
			h := r.probe.Handler()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r.probe.Collector.CollectNow()
				b.StartTimer()
				scrape(b, h, "/metrics", true)
			}
		})
	}
}

func BenchmarkGPUsJSON(b *testing.B) {
	for _, gpus := range []int{8, 64} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			r := newRig(b, rigOptions{gpus: gpus, quiet: true})
			h := r.probe.Handler()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scrape(b, h, server.GPUsPath, false)
			}
		})
	}
}

// BenchmarkCollectCycle is one background collection over simulated GPUs: the probe's own
// work per cycle (a real driver adds its call latency, e.g. ~20 ms per PCIe sample).
func BenchmarkCollectCycle(b *testing.B) {
	for _, gpus := range []int{8, 64} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			r := newRig(b, rigOptions{gpus: gpus, quiet: true})
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.probe.Collector.CollectNow()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkRSS10kScrapes serves 10,000 scrapes from one snapshot, then 10,000 more with a
// new snapshot every third one (a 5 s collection interval under 15 s scrapes), and reports
// RSS and live heap (after GC) before, between and after. Run with -benchtime 1x.
func BenchmarkRSS10kScrapes(b *testing.B) {
	r := newRig(b, rigOptions{gpus: 8, runtime: true, quiet: true})
	h := r.probe.Handler()
	for i := 0; i < 1000; i++ { // warm up caches and pools
		scrape(b, h, "/metrics", true)
	}
	rss0, heap0 := memory()
	var rss1, heap1 uint64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := 0; i < 10_000; i++ {
			scrape(b, h, "/metrics", true)
		}
		b.StopTimer()
		rss1, heap1 = memory()
		b.StartTimer()
		for i := 0; i < 10_000; i++ {
			if i%3 == 0 {
				r.now.Add(int64(5 * time.Second))
				r.probe.Collector.CollectNow()
			}
			scrape(b, h, "/metrics", true)
		}
	}
	b.StopTimer()
	rss2, heap2 := memory()
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	kib := func(a, b uint64) float64 { return (float64(b) - float64(a)) / (1 << 10) }
	b.ReportMetric(mib(rss0), "rss-start-MiB")
	b.ReportMetric(mib(rss1), "rss-after-scrapes-MiB")
	b.ReportMetric(mib(rss2), "rss-after-collections-MiB")
	b.ReportMetric(kib(heap0, heap1), "heap-growth-scrapes-KiB")
	b.ReportMetric(kib(heap1, heap2), "heap-growth-collections-KiB")
}

func memory() (rss, heap uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				rss = kb << 10
			}
		}
	}
	return rss, ms.HeapInuse
}

func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)
}
