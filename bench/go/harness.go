package main

// The workload, identical to bench/clients/src/harness.rs: keys "bench:key:%06d" (no hash
// tags, so a cluster spreads them), all preloaded by 64 writers with a value of
// value-size 'x' bytes; each caller picks a uniformly random key per operation (zipf:
// a Zipf(0.99)-distributed key rank, rank i being key i); mixed is 20% SET, zipf 5% SET;
// only operations that start and end inside the measured window count.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

type runConfig struct {
	Client    string
	URL       string
	Cluster   bool
	Op        string
	Callers   int
	Duration  time.Duration
	Warmup    time.Duration
	ValueSize int
	Keys      int
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

type report struct {
	ops, errors uint64
	seconds     float64
	latencyNs   []int64 // sorted
	firstError  error
}

type tally struct {
	ops, errors uint64
	latencyNs   []int64
	firstError  error
}

func key(i int) string { return fmt.Sprintf("bench:key:%06d", i) }

func run(ctx context.Context, b backend, cfg runConfig) (*report, error) {
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = key(i)
	}
	value := make([]byte, cfg.ValueSize)
	for i := range value {
		value[i] = 'x'
	}
	if err := preload(ctx, b, keys, value); err != nil {
		return nil, fmt.Errorf("preload: %w", err)
	}

	var phase atomic.Int32
	z := newZipf(len(keys), 0.99)
	tallies := make([]tally, cfg.Callers)
	var wg sync.WaitGroup
	for id := range cfg.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tallies[id] = caller(ctx, b, keys, value, cfg.Op, &phase, uint64(id), z)
		}()
	}
	time.Sleep(cfg.Warmup)
	phase.Store(phaseMeasure)
	start := time.Now()
	time.Sleep(cfg.Duration)
	phase.Store(phaseStop)
	seconds := time.Since(start).Seconds()
	wg.Wait()

	r := &report{seconds: seconds}
	for _, t := range tallies {
		r.ops += t.ops
		r.errors += t.errors
		r.latencyNs = append(r.latencyNs, t.latencyNs...)
		if r.firstError == nil {
			r.firstError = t.firstError
		}
	}
	slices.Sort(r.latencyNs)
	return r, nil
}

func preload(ctx context.Context, b backend, keys []string, value []byte) error {
	const writers = 64
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := w; i < len(keys); i += writers {
				if err := b.Set(ctx, keys[i], value); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range writers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func caller(ctx context.Context, b backend, keys []string, value []byte, op string, phase *atomic.Int32, id uint64, z zipf) tally {
	rng := rand.New(rand.NewPCG(0x5eed^id, id))
	t := tally{latencyNs: make([]int64, 0, 4096)}
	for {
		before := phase.Load()
		if before == phaseStop {
			return t
		}
		var i int
		if op == "zipf" {
			i = min(z.sample(rng), len(keys)-1)
		} else {
			i = rng.IntN(len(keys))
		}
		k := keys[i]
		isSet := op == "set" || (op == "mixed" && rng.IntN(10) < 2) ||
			(op == "zipf" && rng.IntN(100) < 5)
		t0 := time.Now()
		var err error
		if isSet {
			err = b.Set(ctx, k, value)
		} else {
			var n int
			n, err = b.Get(ctx, k)
			_ = n
		}
		elapsed := time.Since(t0)
		if before != phaseMeasure || phase.Load() != phaseMeasure {
			continue
		}
		if err != nil {
			t.errors++
			if t.firstError == nil {
				t.firstError = err
			}
			continue
		}
		t.ops++
		t.latencyNs = append(t.latencyNs, elapsed.Nanoseconds())
	}
}

// zipf draws key ranks: rank i (0-based) has weight 1/(i+1)^s. Sampled by binary search in
// the cumulative weights, computed once per run and shared read-only by the callers.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, max(n, 1))
	total := 0.0
	for i := range cdf {
		total += 1 / math.Pow(float64(i+1), s)
		cdf[i] = total
	}
	for i := range cdf {
		cdf[i] /= total
	}
	return zipf{cdf}
}

// sample is the first rank whose cumulative weight reaches a uniform draw in [0, 1).
func (z zipf) sample(rng *rand.Rand) int {
	u := rng.Float64()
	return sort.Search(len(z.cdf), func(i int) bool { return z.cdf[i] >= u })
}

// quantileUs is the latency at q, in microseconds, from the sorted samples.
func (r *report) quantileUs(q float64) float64 {
	if len(r.latencyNs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(r.latencyNs)))) - 1
	i = min(max(i, 0), len(r.latencyNs)-1)
	return round(float64(r.latencyNs[i])/1000, 1)
}

func round(x float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(x*f) / f
}

// JSON is the one line printed per run, field for field bench/clients' format.
func (r *report) JSON(cfg runConfig) map[string]any {
	opsPerSec := 0.0
	if r.seconds > 0 {
		opsPerSec = float64(r.ops) / r.seconds
	}
	if r.firstError != nil {
		fmt.Fprintf(osStderr(), "%s: first error: %v\n", cfg.Client, r.firstError)
	}
	return map[string]any{
		"client":      cfg.Client,
		"op":          cfg.Op,
		"callers":     cfg.Callers,
		"cluster":     cfg.Cluster,
		"value_size":  cfg.ValueSize,
		"ops":         r.ops,
		"errors":      r.errors,
		"seconds":     round(r.seconds, 3),
		"ops_per_sec": round(opsPerSec, 1),
		"p50_us":      r.quantileUs(0.5),
		"p90_us":      r.quantileUs(0.9),
		"p99_us":      r.quantileUs(0.99),
		"p999_us":     r.quantileUs(0.999),
	}
}
