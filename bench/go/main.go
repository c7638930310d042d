// Command bench-go runs bench/clients' workload through Go's two leading Redis clients,
// rueidis (also with its client-side cache, rueidis-cached) and go-redis, with the same flags and the same one-line JSON per run, so the
// Rust and Go numbers sit in one table (see bench/go/README.md).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	cfg := runConfig{}
	flag.StringVar(&cfg.Client, "client", "rueidis", "client: rueidis, rueidis-cached or go-redis")
	flag.StringVar(&cfg.URL, "url", "redis://127.0.0.1:6379", "server URL (a seed node with --cluster)")
	flag.BoolVar(&cfg.Cluster, "cluster", false, "talk to a Redis Cluster (each library's cluster client)")
	flag.StringVar(&cfg.Op, "op", "get", "operation: get, set, mixed (80% GET / 20% SET), zipf (95% GET / 5% SET, Zipf(0.99) keys)")
	flag.IntVar(&cfg.Callers, "callers", 16, "concurrent caller goroutines")
	duration := flag.Float64("duration-secs", 5, "measured seconds")
	warmup := flag.Float64("warmup-secs", 1, "seconds run before measuring")
	flag.IntVar(&cfg.ValueSize, "value-size", 64, "bytes per value")
	flag.IntVar(&cfg.Keys, "keys", 10000, "distinct keys (preloaded before the run)")
	threads := flag.Int("threads", 0, "GOMAXPROCS (default: one per core)")
	flag.Parse()

	cfg.Duration = time.Duration(max(*duration, 0.1) * float64(time.Second))
	cfg.Warmup = time.Duration(max(*warmup, 0) * float64(time.Second))
	cfg.Callers = max(cfg.Callers, 1)
	cfg.Keys = max(cfg.Keys, 1)
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	if cfg.Op != "get" && cfg.Op != "set" && cfg.Op != "mixed" && cfg.Op != "zipf" {
		fail(2, "--op must be get, set, mixed or zipf, not %q", cfg.Op)
	}

	ctx := context.Background()
	backend, err := connect(ctx, cfg.Client, cfg.URL, cfg.Cluster)
	if err != nil {
		fail(1, "%s: %v", cfg.Client, err)
	}
	defer backend.Close()
	report, err := run(ctx, backend, cfg)
	if err != nil {
		fail(1, "%s: %v", cfg.Client, err)
	}
	line, err := json.Marshal(report.JSON(cfg))
	if err != nil {
		fail(1, "encoding the report: %v", err)
	}
	fmt.Println(string(line))
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-go: "+format+"\n", args...)
	os.Exit(code)
}
