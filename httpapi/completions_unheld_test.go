package httpapi_test

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse/keycache"
	"gatehouse/provider"
	"gatehouse/sqlstore"
)

// With admission in memory (SQLite: one process serves the database), a
// whole answer has no hold: nothing is written while the provider works,
// and the answer leaves only once its charge (the generation and the
// counters) survives a crash of the process: appended to the charge
// journal (as gatehouse serve runs), or without one (metering commits
// that wait for the disk) committed to the database. A stream still
// writes its hold before its first event, since it is delivered before
// its cost is known.
func TestWholeAnswerChargedBeforeDelivery(t *testing.T) {
	if testEngine != "sqlite" {
		t.Skip("PostgreSQL admits in the database or against leases, with holds (see TestLeases*)")
	}
	for _, journal := range []bool{true, false} {
		name := map[bool]string{true: "journal", false: "no journal"}[journal]
		t.Run(name, func(t *testing.T) { testWholeAnswerChargedBeforeDelivery(t, journal) })
	}
}

func testWholeAnswerChargedBeforeDelivery(t *testing.T, journal bool) {
	hold := make(chan struct{})
	var opts []envOption
	if !journal {
		opts = append(opts, withoutJournal())
	}
	e := newUpstreamEnv(t, func(u *fakeUpstream) { u.delay = 300 * time.Millisecond; u.hold = hold }, nil,
		func(base string) *provider.Catalog { return testCatalog(t, base, 10*time.Second) }, opts...)
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
	if journal {
		if !e.journalHas(id) {
			t.Fatalf("generation %s of a delivered answer is not in the charge journal", id)
		}
		if err := e.metering.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var cost int64
	if err := raw.QueryRow(`SELECT cost FROM generations WHERE id = $1`, id).Scan(&cost); err != nil {
		t.Fatalf("generation %s of a delivered answer: %v", id, err)
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

// Without a charge journal, a whole answer whose charge cannot be written
// is not delivered: the client gets a 503 and nothing of the answer, so no
// answer ever reaches a client without its charge recorded.
func TestWholeAnswerNotDeliveredUncharged(t *testing.T) {
	if testEngine != "sqlite" {
		t.Skip("PostgreSQL writes a hold before the answer (see TestWholeAnswerChargedBeforeDelivery)")
	}
	e := newUpstreamEnv(t, nil, nil, func(base string) *provider.Catalog { return testCatalog(t, base, 10*time.Second) }, withoutJournal())
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

// With the charge journal, a whole answer is delivered once its charge is
// journalled; a charge the database then refuses stays in the journal
// (the failure logged), and the next process on the database writes it
// before serving.
func TestWholeAnswerJournalKeepsRefusedCharge(t *testing.T) {
	if testEngine != "sqlite" {
		t.Skip("the charge journal is SQLite's (one process serves the database)")
	}
	e := newChatEnv(t, nil, nil)
	e.exec(`CREATE TRIGGER refuse_generations BEFORE INSERT ON generations BEGIN SELECT RAISE(ABORT, 'disk says no'); END`)
	res := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK)
	id, _ := res.json(t)["id"].(string)
	if err := e.metering.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.logs.String(), "disk says no") {
		t.Errorf("the log does not say why the charge was not written:\n%s", e.logs)
	}
	if m := e.money(e.hash); m.Usage != 0 {
		t.Fatalf("key usage %s in the database after the refusal, want 0", m.Usage)
	}
	if !e.journalHas(id) {
		t.Fatalf("the refused charge of %s is not in the journal", id)
	}
	e.exec(`DROP TRIGGER refuse_generations`)
	// The process stops: the journal keeps what the database lacks.
	if err := e.metering.Close(context.Background()); err == nil || !strings.Contains(err.Error(), "the next start writes them") {
		t.Errorf("Close with a charge unwritten: %v, want it said", err)
	}
	// The next one writes it before it serves.
	next := e.db.(*keycache.Cache).Store.(interface {
		NewLedger(*slog.Logger, func([]string)) *sqlstore.Ledger
	}).NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	n, err := next.UseJournal(context.Background(), e.journal)
	if err != nil || n != 1 {
		t.Fatalf("UseJournal of the next process: %d written, %v; want 1", n, err)
	}
	if err := next.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.db.(*keycache.Cache).UsageChanged(e.hash) // a new process starts with no cached key
	var cost int64
	if err := e.readDB().QueryRow(`SELECT cost FROM generations WHERE id = $1`, id).Scan(&cost); err != nil || cost <= 0 {
		t.Fatalf("generation %s after the restart: cost %d, %v", id, cost, err)
	}
	if m := e.money(e.hash); int64(m.Usage) != cost {
		t.Errorf("key usage %s after the restart, want the generation's %d", m.Usage, cost)
	}
}
