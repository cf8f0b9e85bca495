package httpapi_test

import (
	"bufio"
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// With admission in memory (SQLite: one process serves the database), a
// whole answer has no hold: nothing is written while the provider works,
// and the answer leaves only once its charge (the generation and the
// counters, one write) is in the database. A stream still writes its hold
// before its first event, since it is delivered before its cost is known.
func TestWholeAnswerChargedBeforeDelivery(t *testing.T) {
	if testEngine != "sqlite" {
		t.Skip("PostgreSQL admits in the database or against leases, with holds (see TestLeases*)")
	}
	hold := make(chan struct{})
	e := newChatEnv(t, func(u *fakeUpstream) { u.delay = 300 * time.Millisecond; u.hold = hold }, nil)
	raw := e.snapshots().db // no Sync: the rows as they are
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := raw.QueryRow(query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	answered := make(chan *response, 1)
	go func() { answered <- e.chat(e.key, chatBody("acme/chat")) }()
	time.Sleep(100 * time.Millisecond) // the provider is still working
	if n := count(`SELECT count(*) FROM reservations`); n != 0 {
		t.Errorf("%d reservations written while a whole answer is in flight, want none", n)
	}
	res := (<-answered).want(t, http.StatusOK)
	id, _ := res.json(t)["id"].(string)
	var cost int64
	if err := raw.QueryRow(`SELECT cost FROM generations WHERE id = $1`, id).Scan(&cost); err != nil {
		t.Fatalf("generation %s of a delivered answer, read at once: %v", id, err)
	}
	if cost <= 0 {
		t.Errorf("generation %s cost %d, want its cost", id, cost)
	}
	if m := e.money(e.hash); int64(m.Usage) != cost {
		t.Errorf("key usage %s, want the generation's %d", m.Usage, cost)
	}

	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := e.sseClient(ctx, srv, chatBody("acme/chat", "stream", true))
	var seen []string
	nextData(t, bufio.NewReader(stream.Body), &seen) // delivered: its hold is written
	if n := count(`SELECT count(*) FROM reservations WHERE key_hash = $1`, e.hash); n != 1 {
		t.Errorf("%d reservations while a stream is delivered, want its hold", n)
	}
	close(hold)
}

// A whole answer whose charge cannot be written is not delivered: the
// client gets a 503 and nothing of the answer, so no answer ever reaches a
// client without its charge recorded.
func TestWholeAnswerNotDeliveredUncharged(t *testing.T) {
	if testEngine != "sqlite" {
		t.Skip("PostgreSQL writes a hold before the answer (see TestWholeAnswerChargedBeforeDelivery)")
	}
	e := newChatEnv(t, nil, nil)
	e.exec(`CREATE TRIGGER refuse_generations BEFORE INSERT ON generations BEGIN SELECT RAISE(ABORT, 'disk says no'); END`)
	res := e.chat(e.key, chatBody("acme/chat"))
	if res.Status != http.StatusServiceUnavailable {
		t.Fatalf("status %d %s, want 503", res.Status, res.Body)
	}
	if msg := res.errorMessage(t); !strings.Contains(msg, "did not record the request's charge") {
		t.Errorf("message %q", msg)
	}
	if strings.Contains(string(res.Body), "choices") {
		t.Errorf("the answer leaked: %s", res.Body)
	}
	if !strings.Contains(e.logs.String(), "disk says no") {
		t.Errorf("the log does not say why:\n%s", e.logs)
	}
	e.exec(`DROP TRIGGER refuse_generations`)
	var n int
	if err := e.readDB().QueryRow(`SELECT count(*) FROM generations`).Scan(&n); err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d generations recorded, want none", n)
	}
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK) // and the next one is served
}
