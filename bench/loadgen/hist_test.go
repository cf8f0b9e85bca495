package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsAreContiguous(t *testing.T) {
	prevHi := int64(-1)
	for i := 0; i < bucketOf(maxValue)+1; i++ {
		lo, hi := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, prevHi+1)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d, %d]: bucketOf gives %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= 2*subCount && float64(hi-lo+1)/float64(lo) > 1.0/subCount+1e-12 {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/%d of its values", i, lo, hi, subCount)
		}
		prevHi = hi
	}
	if bucketOf(maxValue) >= bucketCount {
		t.Fatalf("bucketOf(max) = %d, beyond %d buckets", bucketOf(maxValue), bucketCount)
	}
	if bucketOf(maxValue*4) != bucketOf(maxValue) || bucketOf(-5) != 0 {
		t.Fatal("out-of-range values are not clamped")
	}
}

// TestQuantileAccuracy compares the histogram's percentiles with exact ones
// over several distributions spanning 1 µs to 60 s.
func TestQuantileAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() time.Duration{
		"uniform 1µs-10ms": func() time.Duration { return time.Microsecond + time.Duration(r.Int64N(int64(10*time.Millisecond))) },
		"log-uniform 1µs-60s": func() time.Duration {
			return time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(60e9)-math.Log(1e3))))
		},
		"exponential mean 2ms": func() time.Duration { return time.Microsecond + time.Duration(r.ExpFloat64()*2e6) },
		"bimodal 200µs/40ms": func() time.Duration {
			if r.IntN(100) < 95 {
				return 200*time.Microsecond + time.Duration(r.Int64N(20_000))
			}
			return 40*time.Millisecond + time.Duration(r.Int64N(4_000_000))
		},
	}
	for name, gen := range dists {
		t.Run(name, func(t *testing.T) {
			var h Histogram
			vals := make([]time.Duration, 200_000)
			for i := range vals {
				vals[i] = gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
				got := h.Quantile(q)
				if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.01 {
					t.Errorf("p%g = %v, exact %v: relative error %.4f > 1%%", q*100, got, exact, rel)
				}
			}
			if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
				t.Errorf("min/max = %v/%v, want %v/%v", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
			}
			if h.Count() != uint64(len(vals)) {
				t.Errorf("count %d", h.Count())
			}
		})
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	var a, b, all Histogram
	for i := 1; i <= 10_000; i++ {
		d := time.Duration(i) * 7919 * time.Nanosecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	for _, q := range []float64{0.01, 0.5, 0.99} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%v: merged %v, together %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Mean() != all.Mean() || a.Min() != all.Min() || a.Max() != all.Max() {
		t.Error("merged mean/min/max differ")
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram is not zero")
	}
}
