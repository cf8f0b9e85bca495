// Command depth measures reads at depth and between neighbours on a running
// server (bench/depth.sh starts it on a seeded database):
//
//   - the last page (and the middle one) of each large list of the API, as
//     many times as -runs says: keys, keys with the disabled ones, members,
//     every key and member assignment of the organization, a guardrail's
//     key assignments, the audit log;
//   - another organization's read latency (its keys, its members) while the
//     seeded organization runs -concurrency of the heaviest of those reads
//     (the page of the slowest median) at once, for -seconds: p50, p99 and the slowest, and what the heavy
//     organization got (answers, and 503s of its share).
//
// It prints a Markdown table.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "the server")
	key := flag.String("key", "", "management key of the seeded organization")
	other := flag.String("other", "", "management key of another organization")
	wide := flag.String("wide", "", "management key of an organization of many workspaces (its list is read too)")
	team := flag.String("team", "", "management key of an organization with a workspace of many members (its list is read too)")
	keys := flag.Int("keys", 1_000_000, "keys of the seeded organization (the other lists' sizes are their total_count)")
	members := flag.Int("members", 1000, "members of the seeded organization, unless the list says")
	runs := flag.Int("runs", 5, "reads of each page")
	conc := flag.Int("concurrency", 8, "heavy reads at once")
	seconds := flag.Int("seconds", 20, "how long the neighbours run")
	flag.Parse()
	if *key == "" || *other == "" {
		log.Fatal("depth: -key and -other are required")
	}
	c := &client{base: *base, http: &http.Client{Timeout: 5 * time.Minute}}

	type list struct {
		name, path string
		total      int
		key        string
	}
	lists := []list{
		{"keys (`GET /keys`)", "/api/v1/keys?offset=%d", *keys, *key},
		{"keys with the disabled (`include_disabled=true`)", "/api/v1/keys?include_disabled=true&offset=%d", *keys, *key},
		{"members (`GET /organization/members`)", "/api/v1/organization/members?limit=100&offset=%d", *members, *key},
		{"key assignments (`GET /guardrails/assignments/keys`)", "/api/v1/guardrails/assignments/keys?limit=100&offset=%d", *keys, *key},
		{"member assignments (`GET /guardrails/assignments/members`)", "/api/v1/guardrails/assignments/members?limit=100&offset=%d", *members, *key},
		{"guardrails (`GET /guardrails`)", "/api/v1/guardrails?limit=100&offset=%d", 0, *key},
		{"presets (`GET /presets`)", "/api/v1/presets?limit=100&offset=%d", 0, *key},
		{"audit log (`GET /audit-log`)", "/api/v1/audit-log?limit=100&offset=%d", *keys, *key},
	}
	// The guardrail that holds the first key assignment, and its own list
	// (the seed assigns every key of a workspace to its first guardrail).
	if _, first, ok := c.page("/api/v1/guardrails/assignments/keys?limit=1", *key); ok && first["guardrail_id"] != nil {
		lists = slices.Insert(lists, 4, list{"a guardrail's key assignments (`GET /guardrails/{id}/assignments/keys`)",
			"/api/v1/guardrails/" + fmt.Sprint(first["guardrail_id"]) + "/assignments/keys?limit=100&offset=%d", *keys, *key})
	}
	if *wide != "" {
		lists = append(lists, list{"workspaces (`GET /workspaces`)", "/api/v1/workspaces?limit=100&offset=%d", 0, *wide})
	}
	if *team != "" { // the members of its workspace that is not the default
		if _, second, ok := c.page("/api/v1/workspaces?limit=1&offset=1", *team); ok && second["id"] != nil {
			lists = append(lists, list{"a workspace's members (`GET /workspaces/{id}/members`)",
				"/api/v1/workspaces/" + fmt.Sprint(second["id"]) + "/members?limit=100&offset=%d", 0, *team})
		}
	}
	fmt.Printf("| list | rows | page | first read | median of %d | slowest |\n|---|---|---|---|---|---|\n", *runs)
	heaviest, heaviestKey, heaviestTime := "", "", time.Duration(0)
	for _, l := range lists {
		if n, _, ok := c.page(fmt.Sprintf(l.path, 0), l.key); ok {
			l.total = n // the list's own total_count (the seed assigns a share of its keys)
		}
		for _, at := range []struct {
			name   string
			offset int
		}{{"first", 0}, {"middle", l.total / 2}, {"last", max(0, l.total-100)}} {
			path := fmt.Sprintf(l.path, at.offset)
			var times []time.Duration
			failed := 0
			for range *runs {
				d, status := c.get(path, l.key)
				if status != http.StatusOK {
					failed++
				}
				times = append(times, d)
			}
			if failed > 0 {
				l.name += fmt.Sprintf(" (%d of %d not 200)", failed, *runs)
			}
			first := times[0]
			slices.Sort(times)
			fmt.Printf("| %s | %d | %s (offset %d) | %s | %s | %s |\n", l.name, l.total, at.name, at.offset, ms(first), ms(times[len(times)/2]), ms(times[len(times)-1]))
			if times[len(times)/2] > heaviestTime { // any page: since pages past the middle are read from the end, the middle is the deepest
				heaviest, heaviestKey, heaviestTime = path, l.key, times[len(times)/2]
			}
		}
	}

	fmt.Printf("\nNeighbours: a seeded organization runs %d × `GET %s` at once for %d s; meanwhile another organization reads its keys and its members, one read after the other.\n\n",
		*conc, heaviest, *seconds)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*seconds)*time.Second)
	defer cancel()
	var ok, busy, other5xx atomic.Int64
	var heavy []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				d, status := c.get(heaviest, heaviestKey)
				switch {
				case status == http.StatusOK:
					ok.Add(1)
					mu.Lock()
					heavy = append(heavy, d)
					mu.Unlock()
				case status == http.StatusServiceUnavailable:
					busy.Add(1)
					time.Sleep(50 * time.Millisecond) // a client honouring the 503 comes back later
				default:
					other5xx.Add(1)
				}
			}
		})
	}
	var light []time.Duration
	lightBad := 0
	time.Sleep(500 * time.Millisecond) // the heavy reads are running
	for i := 0; ctx.Err() == nil; i++ {
		path := "/api/v1/keys"
		if i%2 == 1 {
			path = "/api/v1/organization/members?limit=100"
		}
		d, status := c.get(path, *other)
		if status != http.StatusOK {
			lightBad++
		}
		light = append(light, d)
	}
	wg.Wait()
	slices.Sort(light)
	slices.Sort(heavy)
	fmt.Printf("| who | reads | p50 | p99 | slowest | not 200 |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| the other organization (light reads) | %d | %s | %s | %s | %d |\n", len(light), ms(pct(light, 50)), ms(pct(light, 99)), ms(pct(light, 100)), lightBad)
	fmt.Printf("| the seeded organization (%d heavy at once) | %d answered | %s | %s | %s | %d × 503 (its share), %d other |\n",
		*conc, ok.Load(), ms(pct(heavy, 50)), ms(pct(heavy, 99)), ms(pct(heavy, 100)), busy.Load(), other5xx.Load())
}

type client struct {
	base string
	http *http.Client
}

// get reads path with key and returns how long the whole answer took, and
// its status.
func (c *client) get(path, key string) (time.Duration, int) {
	req, err := http.NewRequest("GET", c.base+path, nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	res, err := c.http.Do(req)
	if err != nil {
		log.Fatalf("GET %s: %v", path, err)
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil {
		log.Fatalf("GET %s: %v", path, err)
	}
	return time.Since(start), res.StatusCode
}

// page returns the total_count of a list's page, if it has one, and its
// first item.
func (c *client) page(path, key string) (int, map[string]any, bool) {
	req, err := http.NewRequest("GET", c.base+path, nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := c.http.Do(req)
	if err != nil {
		log.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	var page struct {
		Data       []map[string]any `json:"data"`
		TotalCount *int             `json:"total_count"`
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil || page.TotalCount == nil {
		return 0, nil, false
	}
	var first map[string]any
	if len(page.Data) > 0 {
		first = page.Data[0]
	}
	return *page.TotalCount, first, true
}

// pct is the p-th percentile of sorted durations (100: the slowest).
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, (len(sorted)*p+99)/100-1)
	return sorted[max(0, i)]
}

func ms(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
