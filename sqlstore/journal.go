package sqlstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// The charge journal. A whole answer may reach its client only once its
// charge survives a crash of Gatehouse. Written as a database transaction
// of its own, that charge costs the SQLite writer a commit per answer
// (about half of the writer's time at one client: `bench/README.md`), and
// the answer waits for it. With a journal (Ledger.UseJournal, for the one
// process that owns a SQLite database) the charge is appended to a file
// instead, one write(2) that a crash of the process cannot undo, and the
// ledger writes it behind in its batches like every other settle. The file
// is fsynced within journalSyncInterval of an append, the bound the
// database's asynchronous metering commits keep, and the process that
// starts after a crash writes what the database lacks of it before it
// serves (its charges' generation ids are not in the ledger).
//
// The journal is a series of segment files, PATH.1, PATH.2, …; appends go
// to the newest, and a new one is started past journalSegmentBytes. An
// older segment is removed once every charge in it is written and the
// database has made those asynchronous commits durable (its engine's
// Flush). A record is a 4-byte little-endian length,
// the CRC-32C of the payload, then the payload: the JSON of a
// journalEntry. A torn last record (a kill in the middle of the write) is
// ignored: its answer was never delivered.
type chargeJournal struct {
	path string

	mu      sync.Mutex
	f       *os.File
	seg     int   // the segment appended to
	size    int64 // its length
	dirty   bool  // appended to since the last fsync
	failed  error // a write or fsync failed: appends are refused
	segs    map[int]*journalSegment
	flush   func(context.Context) error // the engine's Flush
	stop    chan struct{}
	stopped chan struct{}
}

// journalSegment is what the journal knows of one of its files.
type journalSegment struct {
	unwritten int // charges not yet written to the database
}

// journalSegmentBytes is the length past which a new segment is started.
var journalSegmentBytes int64 = 8 << 20

const (
	journalSyncInterval = 100 * time.Millisecond
	maxJournalRecord    = 64 << 20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// journalEntry is a journalled charge: the settle of a reservation admitted
// in memory and never written as a hold.
type journalEntry struct {
	Reservation string                `json:"reservation"`
	Key         string                `json:"key"`
	Chain       []string              `json:"chain,omitempty"`
	Budgets     [][2]string           `json:"budgets,omitempty"` // guardrail, subject
	BYOK        bool                  `json:"byok,omitempty"`
	Generation  *gatehouse.Generation `json:"generation"`
}

func entryOf(r *gatehouse.Reservation, g *gatehouse.Generation) journalEntry {
	e := journalEntry{Reservation: r.ID, Key: r.KeyHash, Chain: r.Chain, BYOK: r.BYOK, Generation: g}
	for _, b := range r.Budgets {
		e.Budgets = append(e.Budgets, [2]string{b.GuardrailID, b.Subject})
	}
	return e
}

// settlement returns the entry as the settle the ledger writes.
func (e journalEntry) settlement() Settlement {
	r := &gatehouse.Reservation{ID: e.Reservation, KeyHash: e.Key, Chain: e.Chain, BYOK: e.BYOK, Generation: e.Generation, Unheld: true}
	for _, b := range e.Budgets {
		r.Budgets = append(r.Budgets, gatehouse.Budget{GuardrailID: b[0], Subject: b[1]})
	}
	return Settlement{ReservationID: e.Reservation, Generation: e.Generation, Unheld: r}
}

// UseJournal makes the ledger journal the charges of whole answers in the
// files PATH.N (see chargeJournal) instead of waiting for their database
// commits, after writing to the database what an earlier process
// journalled and did not write. It is for the one process that owns the
// database (SQLite's serve lock): call it before serving. It does nothing
// with GATEHOUSE_METERING_COMMIT=sync, where every charge waits for the
// disk anyway.
func (l *Ledger) UseJournal(ctx context.Context, path string) (replayed int, err error) {
	flusher, ok := l.s.engine.(interface{ Flush(context.Context) error })
	if !ok {
		return 0, errors.New("charge journal: the engine cannot say when its asynchronous commits are on disk")
	}
	segs, err := journalSegments(path)
	if err != nil {
		return 0, err
	}
	var entries []journalEntry
	for _, seg := range segs {
		es, err := readJournal(segmentName(path, seg), l.logger)
		if err != nil {
			return 0, err
		}
		entries = append(entries, es...)
	}
	if replayed, err = l.s.replayCharges(ctx, entries, l.logger); err != nil {
		return 0, err
	}
	for _, seg := range segs {
		if err := os.Remove(segmentName(path, seg)); err != nil {
			return replayed, fmt.Errorf("charge journal: %w", err)
		}
	}
	if l.s.syncMetering {
		return replayed, nil
	}
	j := &chargeJournal{path: path, seg: 1, segs: map[int]*journalSegment{}, flush: flusher.Flush,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if len(segs) > 0 {
		j.seg = segs[len(segs)-1] + 1
	}
	if err := j.open(); err != nil {
		return replayed, err
	}
	go j.run()
	l.mu.Lock()
	l.journal = j
	l.mu.Unlock()
	return replayed, nil
}

// JournalFiles returns the segment files of the journal at path, in
// order.
func JournalFiles(path string) ([]string, error) {
	segs, err := journalSegments(path)
	names := make([]string, len(segs))
	for i, n := range segs {
		names[i] = segmentName(path, n)
	}
	return names, err
}

// segmentName is the file of the journal at path's segment n.
func segmentName(path string, n int) string { return path + "." + strconv.Itoa(n) }

// journalSegments returns the numbers of path's segments, in order.
func journalSegments(path string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("charge journal: %w", err)
	}
	prefix := filepath.Base(path) + "."
	var segs []int
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), prefix); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 && strconv.Itoa(n) == rest {
				segs = append(segs, n)
			}
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// readJournal reads a segment's records, up to a torn or damaged one.
func readJournal(name string, logger interface{ Warn(string, ...any) }) ([]journalEntry, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("charge journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []journalEntry
	var offset int64
	for {
		var head [8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if err != io.EOF {
				logger.Warn("charge journal: a torn record at the end of a segment is ignored (its answer was not delivered)", "file", name, "offset", offset)
			}
			return out, nil
		}
		n := binary.LittleEndian.Uint32(head[:4])
		if n > maxJournalRecord {
			logger.Warn("charge journal: a damaged record ends the segment", "file", name, "offset", offset)
			return out, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil || crc32.Checksum(payload, crc32c) != binary.LittleEndian.Uint32(head[4:]) {
			logger.Warn("charge journal: a torn record at the end of a segment is ignored (its answer was not delivered)", "file", name, "offset", offset)
			return out, nil
		}
		var e journalEntry
		if err := json.Unmarshal(payload, &e); err != nil || e.Generation == nil {
			return nil, fmt.Errorf("charge journal: %s at %d: a record that is not a charge", name, offset)
		}
		out = append(out, e)
		offset += 8 + int64(n)
	}
}

// replayCharges writes the journalled charges whose generations the
// ledger lacks, waiting for the disk, and returns how many it wrote. A
// charge that cannot be written is logged and skipped (as the ledger does
// with an operation that fails alone).
func (s *Store) replayCharges(ctx context.Context, entries []journalEntry, logger interface {
	Error(string, ...any)
}) (int, error) {
	replayed := 0
	for chunk := range slices.Chunk(entries, 500) {
		ids := make([]string, len(chunk))
		for i, e := range chunk {
			ids[i] = e.Generation.ID
		}
		have, err := view(ctx, s, func(tx *Tx) (map[string]string, error) {
			return tx.existing(ctx, `SELECT id, id FROM generations`, "id", ids)
		})
		if err != nil {
			return replayed, err
		}
		var todo []Settlement
		for _, e := range chunk {
			if _, ok := have[e.Generation.ID]; !ok {
				todo = append(todo, e.settlement())
			}
		}
		if len(todo) == 0 {
			continue
		}
		write := func(ss []Settlement) error {
			return do(ctx, s, lock, func(tx *Tx) error { _, err := tx.settle(ctx, ss); return err })
		}
		if err := write(todo); err == nil {
			replayed += len(todo)
			continue
		} else if gatehouse.ErrorCode(err) == gatehouse.EUNAVAILABLE {
			return replayed, err
		}
		for _, st := range todo {
			if err := write([]Settlement{st}); err != nil {
				if gatehouse.ErrorCode(err) == gatehouse.EUNAVAILABLE {
					return replayed, err
				}
				logger.Error("charge journal: a charge could not be written", "generation_id", st.Generation.ID, "error", err.Error())
				continue
			}
			replayed++
		}
	}
	return replayed, nil
}

// open starts the segment j.seg.
func (j *chargeJournal) open() error {
	f, err := os.OpenFile(segmentName(j.path, j.seg), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("charge journal: %w", err)
	}
	j.f, j.size = f, 0
	j.segs[j.seg] = &journalSegment{}
	return nil
}

// recordBuffers hold records being encoded: the write copies them.
var recordBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// append writes a charge to the journal and returns its segment, once a
// crash of this process cannot undo it.
func (j *chargeJournal) append(e journalEntry) (int, error) {
	buf := recordBuffers.Get().(*[]byte)
	record := e.appendJSON(append((*buf)[:0], make([]byte, 8)...))
	defer func() { *buf = record; recordBuffers.Put(buf) }()
	payload := record[8:]
	binary.LittleEndian.PutUint32(record[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(record[4:], crc32.Checksum(payload, crc32c))
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return 0, gatehouse.WrapError(j.failed, gatehouse.EUNAVAILABLE, "the metering journal cannot be written; retry shortly")
	}
	if j.size >= journalSegmentBytes {
		j.rotate()
	}
	if _, err := j.f.Write(record); err != nil {
		// A short write leaves a torn record, which ends the segment for
		// the replay: nothing may follow it.
		j.failed = err
		return 0, gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "the metering journal cannot be written; retry shortly")
	}
	j.size += int64(len(record))
	j.dirty = true
	j.segs[j.seg].unwritten++
	return j.seg, nil
}

// rotate closes the segment appended to and starts the next; a failure
// keeps the old one. j.mu is held.
func (j *chargeJournal) rotate() {
	old, oldSeg := j.f, j.seg
	if err := old.Sync(); err != nil {
		j.failed = err
		return
	}
	j.seg++
	if err := j.open(); err != nil {
		j.seg, j.f = oldSeg, old
		return
	}
	j.dirty = false
	old.Close()
}

// done records that a charge of segment seg is in the database.
func (j *chargeJournal) done(seg int) {
	j.mu.Lock()
	if s := j.segs[seg]; s != nil {
		s.unwritten--
	}
	j.mu.Unlock()
}

// run fsyncs the segment appended to within journalSyncInterval of an
// append, and removes the older segments whose charges are all written.
func (j *chargeJournal) run() {
	defer close(j.stopped)
	tick := time.NewTicker(journalSyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-tick.C:
		}
		// The fsync runs outside the lock, so that appends do not wait
		// for it; a segment closed meanwhile was fsynced by rotate.
		j.mu.Lock()
		f, sync := j.f, j.dirty && j.failed == nil
		j.dirty = false
		j.mu.Unlock()
		if sync {
			if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
				j.mu.Lock()
				j.failed = err
				j.mu.Unlock()
			}
		}
		j.mu.Lock()
		var gone []int
		for n, s := range j.segs {
			if n != j.seg && s.unwritten == 0 {
				gone = append(gone, n) // closed, and written: nothing changes it
			}
		}
		j.mu.Unlock()
		if len(gone) == 0 || j.flushed() != nil {
			continue
		}
		j.mu.Lock()
		for _, n := range gone {
			if os.Remove(segmentName(j.path, n)) == nil {
				delete(j.segs, n)
			}
		}
		j.mu.Unlock()
	}
}

// flushed waits until the database's asynchronous commits so far are
// on disk.
func (j *chargeJournal) flushed() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return j.flush(ctx)
}

// close stops the journal, once the ledger has written what it could.
// When every charge is in the database, its files are removed once the
// database's commits of them are on disk; else they are kept for the next
// start to write.
func (j *chargeJournal) close() error {
	close(j.stop)
	<-j.stopped
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := errors.Join(j.f.Sync(), j.f.Close()); err != nil {
		return fmt.Errorf("charge journal: %w", err)
	}
	for _, s := range j.segs {
		if s.unwritten > 0 {
			return fmt.Errorf("charge journal: %s.* keeps charges the database lacks; the next start writes them", j.path)
		}
	}
	if err := j.flushed(); err != nil {
		return fmt.Errorf("charge journal: kept for the next start: %w", err)
	}
	var err error
	for n := range j.segs {
		if rmErr := os.Remove(segmentName(j.path, n)); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
	}
	return err
}

// appendJSON appends the entry as encoding/json would encode it, less its
// zero fields (which read back as zero), without reflection: it is written
// on the path of every whole answer (encoding/json took half of append's
// time). json.Unmarshal reads it back (TestJournalEntryEncoding).
func (e journalEntry) appendJSON(b []byte) []byte {
	b = append(b, `{"reservation":`...)
	b = jsonobj.AppendString(b, e.Reservation)
	b = append(b, `,"key":`...)
	b = jsonobj.AppendString(b, e.Key)
	if len(e.Chain) > 0 {
		b = append(b, `,"chain":[`...)
		for i, h := range e.Chain {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonobj.AppendString(b, h)
		}
		b = append(b, ']')
	}
	if len(e.Budgets) > 0 {
		b = append(b, `,"budgets":[`...)
		for i, p := range e.Budgets {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = jsonobj.AppendString(b, p[0])
			b = append(b, ',')
			b = jsonobj.AppendString(b, p[1])
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	if e.BYOK {
		b = append(b, `,"byok":true`...)
	}
	g := e.Generation
	b = append(b, `,"generation":{"ID":`...)
	b = jsonobj.AppendString(b, g.ID)
	for _, f := range []struct {
		name string
		v    string
	}{{"OrganizationID", g.OrganizationID}, {"WorkspaceID", g.WorkspaceID}, {"KeyHash", g.KeyHash},
		{"Model", g.Model}, {"Provider", g.Provider}, {"Status", g.Status}} {
		if f.v != "" {
			b = append(b, ',', '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			b = jsonobj.AppendString(b, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"UpstreamID", g.UpstreamID}, {"FinishReason", g.FinishReason}, {"SessionID", g.SessionID},
		{"ExternalUser", g.ExternalUser}, {"HTTPReferer", g.HTTPReferer}, {"AppTitle", g.AppTitle}, {"UserAgent", g.UserAgent}} {
		if f.v != nil {
			b = append(b, ',', '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			b = jsonobj.AppendString(b, *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"PromptTokens", g.PromptTokens}, {"CompletionTokens", g.CompletionTokens},
		{"CacheReadTokens", g.CacheReadTokens}, {"CacheWriteTokens", g.CacheWriteTokens},
		{"LatencyMS", g.LatencyMS}, {"GenerationMS", g.GenerationMS}} {
		if f.v != 0 {
			b = append(b, ',', '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	if g.Cost != 0 {
		b = append(b, `,"Cost":`...)
		b = g.Cost.AppendDecimal(b) // dollars, as Money's MarshalJSON
	}
	if g.BYOK {
		b = append(b, `,"BYOK":true`...)
	}
	if g.Streamed {
		b = append(b, `,"Streamed":true`...)
	}
	if g.ProviderResponses != nil {
		b = appendProviderResponses(append(b, `,"ProviderResponses":`...), g.ProviderResponses)
	}
	if c := g.Content; c != nil {
		b = append(b, `,"Content":{"messages":`...)
		if len(c.Messages) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, c.Messages...) // valid JSON, as the client sent it
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{"completion", c.Completion}, {"reasoning", c.Reasoning}} {
			if f.v != nil {
				b = append(b, ',', '"')
				b = append(b, f.name...)
				b = append(b, '"', ':')
				b = jsonobj.AppendString(b, *f.v)
			}
		}
		if c.Error != nil {
			b = append(b, `,"error":{"message":`...)
			b = jsonobj.AppendString(b, c.Error.Message)
			if c.Error.Provider != nil {
				b = append(b, `,"provider":`...)
				b = jsonobj.AppendString(b, *c.Error.Provider)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if !g.CreatedAt.IsZero() {
		b = append(b, `,"CreatedAt":"`...)
		b = g.CreatedAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return append(b, '}', '}')
}

// appendProviderResponses appends a generation's attempts as
// encoding/json writes them.
func appendProviderResponses(b []byte, rs []gatehouse.ProviderResponse) []byte {
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonobj.AppendString(append(b, `{"provider":`...), r.Provider)
		b = jsonobj.AppendString(append(b, `,"model":`...), r.Model)
		b = strconv.AppendInt(append(b, `,"status":`...), int64(r.Status), 10)
		b = strconv.AppendInt(append(b, `,"latency_ms":`...), r.LatencyMS, 10)
		if r.UpstreamID != "" {
			b = jsonobj.AppendString(append(b, `,"id":`...), r.UpstreamID)
		}
		b = strconv.AppendBool(append(b, `,"is_byok":`...), r.BYOK)
		b = append(b, '}')
	}
	return append(b, ']')
}
