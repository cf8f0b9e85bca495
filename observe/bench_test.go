package observe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"gatehouse"
)

// BenchmarkDelivery measures what one event costs each of the three
// destinations of the chat benchmark (bench/README, issue 28), sent alone
// and in batches of 100, to a local server that reads the body and answers
// 200 (its CPU is counted: on one machine it shares the cores), and what
// writing it to the outbox costs before the database (encoding and
// sealing). Reported as the process's CPU time an event (cpu-ns/event,
// user and system, both cores), beside the wall time.
func BenchmarkDelivery(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	s := newSender(defaultClient(4, loopback))
	dests := []*gatehouse.Destination{
		testDest("webhook", map[string]string{"url": srv.URL + "/hook"}),
		testDest("otel-collector", map[string]string{"endpoint": srv.URL + "/otel"}),
		testDest("langfuse", map[string]string{"baseUrl": srv.URL + "/lf", "publicKey": "pk-bench", "secretKey": "sk-bench-0123456789"}),
	}
	for _, d := range dests {
		for _, n := range []int{1, 100} {
			evs := make([]*event, n)
			for i := range evs {
				evs[i] = view(testEvent(), true, newSpanIDs()) // no text: the chat benchmark logs no I/O
			}
			deliver := registry[d.Type].deliver
			b.Run(fmt.Sprintf("%s/batch=%d", d.Type, n), func(b *testing.B) {
				start := cpuTime(b)
				for b.Loop() {
					if o := deliver(context.Background(), s, d, evs); !o.ok() {
						b.Fatalf("%s: %v (status %d)", d.Type, o.err, o.status)
					}
				}
				b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
			})
		}
	}
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("outbox-entry", func(b *testing.B) {
		e := view(testEvent(), true, newSpanIDs())
		start := cpuTime(b)
		for b.Loop() {
			enc, err := encodeEvent(e)
			if err != nil {
				b.Fatal(err)
			}
			_ = box.Seal(enc, []byte(newEntryID())) // as sqlstore.AddTraces seals an entry
		}
		b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/event")
	})
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
