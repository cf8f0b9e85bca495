package gatehouse

import (
	"testing"
	"time"
)

// Benchmarks of the arithmetic every metered request and every key
// response does: reading and adding to usage counters, and period starts.

var benchNow = time.Date(2026, 11, 21, 10, 30, 0, 123_000_000, time.UTC)

func benchCounter() Counter {
	return Counter{}.Add(benchNow.Add(-time.Hour), USD(3)).Add(benchNow.Add(-time.Minute), 150_000_000)
}

func BenchmarkCounterAt(b *testing.B) {
	c := benchCounter()
	var sink Usage
	b.ReportAllocs()
	for b.Loop() {
		sink = c.At(benchNow)
	}
	if sink.Daily == 0 {
		b.Fatal("the day's usage reads as zero")
	}
}

func BenchmarkCounterAdd(b *testing.B) {
	c := benchCounter()
	b.ReportAllocs()
	for b.Loop() {
		c = c.Add(benchNow, 1_000)
	}
	if c.Total == 0 {
		b.Fatal("no total")
	}
}

func BenchmarkIntervalStart(b *testing.B) {
	for _, i := range []Interval{Daily, Weekly, Monthly} {
		b.Run(string(i), func(b *testing.B) {
			var sink time.Time
			b.ReportAllocs()
			for b.Loop() {
				sink = i.Start(benchNow)
			}
			if sink.After(benchNow) {
				b.Fatal("a period starts after now")
			}
		})
	}
}

func BenchmarkKeyLimitRemaining(b *testing.B) {
	limit := USD(10)
	k := &Key{Limit: &limit, LimitReset: Monthly, Usage: benchCounter(), IncludeBYOKInLimit: true, BYOKUsage: benchCounter()}
	b.ReportAllocs()
	for b.Loop() {
		if k.LimitRemaining(benchNow) == nil {
			b.Fatal("no limit")
		}
	}
}
