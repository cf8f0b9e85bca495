package main

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets, in the manner of
// HdrHistogram: values below 2^(subBits+1) ns are exact, and above that each
// power of two is cut into 2^subBits equal buckets, so a bucket is at most
// 1/2^subBits (0.78%) of its values wide. Reported percentiles are bucket
// midpoints, within about 0.4% of the true value. Values range from 1 ns to
// 2^maxExp ns (about 18 minutes); larger ones are clamped. The zero value is
// ready to use; a Histogram is not safe for concurrent use (each worker keeps
// its own and they are merged).
type Histogram struct {
	counts   [bucketCount]uint64
	n        uint64
	sum      float64
	min, max int64
}

const (
	subBits     = 7
	subCount    = 1 << subBits // buckets per power of two
	maxExp      = 40           // 2^40 ns ≈ 18 minutes
	bucketCount = (maxExp-subBits)*subCount + 2*subCount
	maxValue    = int64(1)<<maxExp - 1
)

// bucketOf returns the bucket index of v (nanoseconds).
func bucketOf(v int64) int {
	if v < 0 {
		v = 0
	}
	if v > maxValue {
		v = maxValue
	}
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - subBits // >= 1
	return shift*subCount + int(v>>shift)
}

// bucketBounds returns the smallest and largest value of bucket i.
func bucketBounds(i int) (lo, hi int64) {
	if i < 2*subCount {
		return int64(i), int64(i)
	}
	shift := i/subCount - 1
	sub := int64(i - shift*subCount)
	return sub << shift, (sub+1)<<shift - 1
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Min and Max return the exact extremes (0 when empty).
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest value recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the exact mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the value below which a fraction q (0..1) of the values
// lie: the midpoint of the bucket holding the ceil(q*n)-th smallest value,
// clamped to the exact min and max.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	rank = min(rank, h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketBounds(i)
			v := lo + (hi-lo)/2
			return time.Duration(min(max(v, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
