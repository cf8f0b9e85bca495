package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/meter"
	"gatehouse/provider"
)

// TestCrashMeteringInvariant kills the real server with SIGKILL while
// clients call a model through it, restarts it on the same database, and
// does that again: after every restart each key's and each guardrail
// budget's recorded usage is at least the cost of the answers the clients
// received, and at most that plus the reservations of the calls in flight
// at the kills.
//
// It holds whether a killed process's holds lapse uncharged (every answer
// settled before it is sent) or are charged at their reservation (settles
// written behind), so the test checks bounds, not a mechanism. With
// settles written behind, an answer received just before a kill may be
// charged its reservation rather than its cost: its hold was still open.
// So an answer counts toward the upper bound with what its ledger entry
// (GET /generation) says it was charged, which must be its exact cost
// unless the entry is marked cancelled (charged the reservation), or with
// its reservation when the ledger has no entry of it.
func TestCrashMeteringInvariant(t *testing.T) {
	crashEngines(t, testCrashMeteringInvariant)
}

// meterKills is how many times the workload's server is killed.
const meterKills = 3

// meterAccount is a key of the metering workload, and what its clients
// saw of its calls.
type meterAccount struct {
	name    string
	clients int
	limit   gatehouse.Money // the key's limit; 0: none
	budget  gatehouse.Money // limit_usd of the guardrail assigned to the key; 0: none
	refusal int             // the status of a call refused once a limit is reached; 0: none expected

	key, hash, guardrail string

	mu        sync.Mutex
	received  gatehouse.Money // the cost of the answers received whole
	inFlight  gatehouse.Money // the reservations of the calls cut off by a kill
	charged   gatehouse.Money // what the answers received may have been charged: see ledger
	pending   []answer        // answers received whose ledger entry is not looked up yet
	nReceived int
	nInFlight int
	nRefused  int
	nPartial  int // answers received, charged their reservation as the ledger says
	nMissing  int // answers received that the ledger does not have
}

// answer is an answer received whole: its generation, what its usage
// costs and what was reserved for it.
type answer struct {
	id             string
	cost, reserved gatehouse.Money
}

// meterLoad is the workload: the model called, the accounts, and the
// calls cut off by the current round's kill.
type meterLoad struct {
	model     *provider.Model
	accounts  []*meterAccount
	client    *http.Client // for the calls, one connection each
	api       *http.Client // for the ledger's reads
	cut       atomic.Int64 // calls cut off in flight, this round
	cutAnswer atomic.Int64 // of them, answers cut off after their 200
}

func testCrashMeteringInvariant(t *testing.T, vars map[string]string, mgmt string) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, 0))
	l := &meterLoad{
		client: &http.Client{Timeout: waitLimit, Transport: &http.Transport{DisableKeepAlives: true}},
		api:    &http.Client{Timeout: waitLimit, Transport: &http.Transport{}},
		accounts: []*meterAccount{
			// Every call admitted: the accounting alone is checked.
			{name: "roomy", clients: 4, limit: gatehouse.USD(1000), budget: gatehouse.USD(1000)},
			// Limits reached early, so that calls are refused, and the
			// holds of calls cut off by kills meet what is left of them.
			{name: "capped", clients: 2, limit: gatehouse.USD(1) / 20, refusal: http.StatusPaymentRequired},
			{name: "tight", clients: 2, budget: gatehouse.USD(1) / 20, refusal: http.StatusForbidden},
		},
	}
	vars["GATEHOUSE_PROVIDERS_FILE"], l.model = meterProviders(t, startFakeLLM(t))
	s, cmd := launchCmd(t, vars)
	s.waitListening()
	l.setup(t, s, mgmt)

	inFlight, journalled := 0, 0
	for round := range meterKills {
		if round > 0 {
			s, cmd = launchCmd(t, vars)
			s.waitListening()
			journalled += replayedCharges(s)
			l.checkKeys(t, fmt.Sprintf("after kill %d", round), s, mgmt)
		}
		delay := time.Duration(150+rng.IntN(450)) * time.Millisecond
		l.round(t, s, cmd, seed, round, delay, round == meterKills-1)
		inFlight += int(l.cut.Load())
	}
	s = startProcess(t, vars)
	journalled += replayedCharges(s)
	l.checkKeys(t, fmt.Sprintf("after kill %d", meterKills), s, mgmt)
	s.stop() // SIGTERM: whatever is written behind is written now
	l.checkStore(t, vars["GATEHOUSE_DATABASE_URL"])

	var received, refused, partial, missing int
	for _, a := range l.accounts {
		received += a.nReceived
		refused += a.nRefused
		partial += a.nPartial
		missing += a.nMissing
		if a.refusal != 0 && a.nRefused == 0 {
			t.Errorf("key %s: no call refused: its limit of $%s/$%s was never reached; the load is too light", a.name, a.limit, a.budget)
		}
	}
	if received == 0 || inFlight == 0 {
		t.Errorf("%d answers received, %d calls in flight at the %d kills: the test proved nothing", received, inFlight, meterKills)
	}
	t.Logf("%d answers received (%d of them charged their reservation, %d missing from the ledger), %d calls in flight at the %d kills, %d refused; %d charges written from the journal at the restarts",
		received, partial, missing, inFlight, meterKills, refused, journalled)
}

// replayedCharges returns how many charges a SQLite server that just
// started wrote from the journal of the process killed before it.
func replayedCharges(s *testServer) int {
	line, ok := logLine(s.stderr.String(), "wrote the charges of answers the last run delivered and had not yet written to the ledger")
	if !ok {
		return 0
	}
	n, _ := line["charges"].(float64)
	return int(n)
}

// startFakeLLM starts cmd/fakellm on a free port, for as long as the test
// runs, and returns the base URL of its API.
func startFakeLLM(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(fakellmBinary(t), "--addr", "127.0.0.1:0")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	listening := regexp.MustCompile(`listening on (http://\S+/v1)`)
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("fakellm did not say where it listens within %v:\n%s", waitLimit, logs)
	return ""
}

// meterProviders writes a providers file serving fakellm's echo model at
// prices that make every token cost a fraction of a nano-dollar more than
// a whole number of them (so that rounding is exercised), and returns its
// path and the model as the server reads it.
func meterProviders(t *testing.T, baseURL string) (string, *provider.Model) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.yaml")
	content := "providers:\n  - id: fake\n    base_url: " + baseURL + "\n    models:\n" +
		"      - {id: echo, prompt_price: 12.3456789, completion_price: 98.7654321}\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, err := provider.LoadProviders(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	model, _, ok := catalog.Model("fake/echo")
	if !ok {
		t.Fatal("fake/echo is not in the providers file")
	}
	return path, model
}

// setup creates the accounts' keys and guardrails.
func (l *meterLoad) setup(t *testing.T, s *testServer, mgmt string) {
	t.Helper()
	for _, a := range l.accounts {
		create := map[string]any{"name": a.name}
		if a.limit != 0 {
			create["limit"] = a.limit
		}
		status, body := s.do("POST", "/api/v1/keys", mgmt, create)
		if status != http.StatusCreated {
			t.Fatalf("create key %s: %d %v", a.name, status, body)
		}
		a.key, a.hash = str(body["key"]), str(body["data"].(map[string]any)["hash"])
		if a.budget == 0 {
			continue
		}
		status, body = s.do("POST", "/api/v1/guardrails", mgmt, map[string]any{
			"name": a.name, "limit_usd": a.budget, "reset_interval": "monthly"})
		if status != http.StatusCreated {
			t.Fatalf("create guardrail %s: %d %v", a.name, status, body)
		}
		a.guardrail = str(body["data"].(map[string]any)["id"])
		status, body = s.do("POST", "/api/v1/guardrails/"+a.guardrail+"/assignments/keys", mgmt,
			map[string]any{"key_hashes": []string{a.hash}})
		if status != http.StatusOK {
			t.Fatalf("assign guardrail %s: %d %v", a.name, status, body)
		}
	}
}

// round runs the clients against s until, after delay, its process is
// killed, and waits until every client has seen it go.
// round runs the load for delay and kills the server; last, it runs on
// (up to 20 s) until every account with a limit has had a call refused, so
// that a loaded machine does not leave the limits untested.
func (l *meterLoad) round(t *testing.T, s *testServer, cmd *exec.Cmd, seed uint64, round int, delay time.Duration, last bool) {
	t.Helper()
	l.cut.Store(0)
	l.cutAnswer.Store(0)
	before := l.totals()
	var wg sync.WaitGroup
	c := 0
	for _, a := range l.accounts {
		for range a.clients {
			r := mrand.New(mrand.NewPCG(seed, uint64(1000*(round+1)+c)))
			c++
			wg.Go(func() {
				for l.call(t, r, s.url, a) {
				}
			})
		}
	}
	time.Sleep(delay)
	for deadline := time.Now().Add(20 * time.Second); last && !l.refusedEach() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	sigkill(t, s, cmd)
	wg.Wait()
	after := l.totals()
	t.Logf("round %d: killed after %v: %d answers received, %d refused, %d calls in flight (%d of them cut off after their 200)",
		round+1, delay, after[0]-before[0], after[1]-before[1], l.cut.Load(), l.cutAnswer.Load())
}

// refusedEach reports whether every account with a limit had a call
// refused.
func (l *meterLoad) refusedEach() bool {
	for _, a := range l.accounts {
		a.mu.Lock()
		none := a.refusal != 0 && a.nRefused == 0
		a.mu.Unlock()
		if none {
			return false
		}
	}
	return true
}

// totals returns the answers received and the calls refused so far.
func (l *meterLoad) totals() [2]int {
	var n [2]int
	for _, a := range l.accounts {
		a.mu.Lock()
		n[0], n[1] = n[0]+a.nReceived, n[1]+a.nRefused
		a.mu.Unlock()
	}
	return n
}

// call makes one chat completion, streamed or not, with the key of a and
// records what came of it; it returns false once the server is gone.
func (l *meterLoad) call(t *testing.T, r *mrand.Rand, url string, a *meterAccount) bool {
	maxTokens, stream := 1+r.IntN(60), r.IntN(2) == 0
	words := make([]string, 1+r.IntN(40))
	for i := range words {
		words[i] = strconv.Itoa(r.IntN(1000))
	}
	body, err := json.Marshal(map[string]any{"model": l.model.Slug(), "max_tokens": maxTokens, "stream": stream,
		"messages": []any{map[string]any{"role": "user", "content": strings.Join(words, " ")}}})
	if err != nil {
		t.Error(err)
		return false
	}
	// What the server holds for the call once admitted, from the body's
	// length and the cap: both exactly as sent.
	reserved := meter.Estimate(l.model, len(body), maxTokens)
	req, err := http.NewRequest("POST", url+"/api/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return false
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false // never sent: the server was gone already
	}
	if err != nil { // sent; admitted or not, nobody knows
		l.cutOff(a, reserved, false)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode == a.refusal { // refused before any upstream call
			a.mu.Lock()
			a.nRefused++
			a.mu.Unlock()
			time.Sleep(5 * time.Millisecond) // leave the server to the admitted calls
			return true
		}
		t.Errorf("key %s: chat completion: %d %s (%v)", a.name, resp.StatusCode, raw, err)
		l.cutOff(a, reserved, false) // whatever it was, it holds no more than that
		return false
	}
	id, prompt, completion, whole, err := readAnswer(resp.Body, stream)
	if err != nil {
		t.Errorf("key %s: chat completion (stream %t): %v", a.name, stream, err)
	}
	if !whole || err != nil {
		l.cutOff(a, reserved, true)
		return false
	}
	cost := l.model.Cost(prompt, completion)
	if cost > reserved {
		t.Errorf("key %s: an answer costing $%s exceeds its reservation of $%s: the test's bounds assume it never does", a.name, cost, reserved)
	}
	a.mu.Lock()
	a.received += cost
	a.nReceived++
	a.pending = append(a.pending, answer{id: id, cost: cost, reserved: reserved})
	a.mu.Unlock()
	return true
}

// cutOff records a call whose answer was not received: it may hold, or
// have been charged, up to its reservation.
func (l *meterLoad) cutOff(a *meterAccount, reserved gatehouse.Money, afterStatus bool) {
	a.mu.Lock()
	a.inFlight += reserved
	a.nInFlight++
	a.mu.Unlock()
	l.cut.Add(1)
	if afterStatus {
		l.cutAnswer.Add(1)
	}
}

// readAnswer reads a chat completion's 200 answer and returns its
// generation id and usage. whole is false when the answer broke off (a
// streamed one counts as received only once its "data: [DONE]" is read);
// err is an answer that is whole but malformed.
func readAnswer(body io.Reader, stream bool) (id string, prompt, completion int64, whole bool, err error) {
	type object struct {
		ID    string `json:"id"`
		Usage *struct {
			PromptTokens     *int64 `json:"prompt_tokens"`
			CompletionTokens *int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	var obj object
	usage := func(what string) (string, int64, int64, bool, error) {
		if obj.ID == "" || obj.Usage == nil || obj.Usage.PromptTokens == nil || obj.Usage.CompletionTokens == nil {
			return "", 0, 0, true, fmt.Errorf("%s without id or usage", what)
		}
		return obj.ID, *obj.Usage.PromptTokens, *obj.Usage.CompletionTokens, true, nil
	}
	if !stream {
		raw, err := io.ReadAll(body)
		if err != nil {
			return "", 0, 0, false, nil
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", 0, 0, true, fmt.Errorf("a malformed answer %q: %v", raw, err)
		}
		return usage(fmt.Sprintf("an answer %s", raw))
	}
	br := bufio.NewReader(body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", 0, 0, false, nil
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return usage("a stream")
		}
		var chunk object
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return "", 0, 0, true, fmt.Errorf("a malformed event %q: %v", data, err)
		}
		if obj.ID == "" {
			obj.ID = chunk.ID
		}
		if chunk.Usage != nil {
			obj.Usage = chunk.Usage
		}
	}
}

// ledger looks up the entries of the answers a's clients received since
// the last look, once the process that served them is dead. Each answer
// counts toward the upper bound with what its entry says it was charged:
// its exact cost, or its reservation if the entry is marked cancelled
// (partial); with no entry, its hold may have been charged whole.
func (l *meterLoad) ledger(t *testing.T, s *testServer, a *meterAccount) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	var wrong []string // entries that break the ledger's contract
	for _, an := range a.pending {
		req, err := http.NewRequest("GET", s.url+"/api/v1/generation?id="+an.id, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+a.key)
		resp, err := l.api.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data struct {
				TotalCost *gatehouse.Money `json:"total_cost"`
				Cancelled bool             `json:"cancelled"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		got := body.Data.TotalCost
		switch {
		case resp.StatusCode == http.StatusNotFound:
			a.charged += an.reserved
			a.nMissing++
		case resp.StatusCode != http.StatusOK || err != nil || got == nil:
			t.Fatalf("GET /generation?id=%s: %d, total_cost %v (%v)", an.id, resp.StatusCode, got, err)
		case !body.Data.Cancelled && *got != an.cost:
			wrong = append(wrong, fmt.Sprintf("%s charged $%s, its usage costing $%s", an.id, *got, an.cost))
			a.charged += max(*got, an.cost)
		case body.Data.Cancelled && (*got < an.cost || *got > an.reserved):
			wrong = append(wrong, fmt.Sprintf("%s (cancelled) charged $%s, its usage costing $%s and its reservation $%s",
				an.id, *got, an.cost, an.reserved))
			a.charged += max(*got, an.cost)
		default:
			a.charged += *got
			if body.Data.Cancelled {
				a.nPartial++
			}
		}
	}
	if len(wrong) > 0 {
		t.Errorf("key %s: %d of %d ledger entries of answers received break the ledger's contract (an entry charges its usage's cost, or if cancelled at most its reservation): %s",
			a.name, len(wrong), len(a.pending), strings.Join(wrong[:min(3, len(wrong))], "; "))
	}
	a.pending = nil
	l.api.CloseIdleConnections()
}

// checkKeys checks the keys' usage as the API reports it, read until two
// reads a moment apart agree, since writes behind may still be landing.
func (l *meterLoad) checkKeys(t *testing.T, when string, s *testServer, mgmt string) {
	t.Helper()
	var last []gatehouse.Money
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(100 * time.Millisecond) {
		var cur []gatehouse.Money
		for _, a := range l.accounts {
			cur = append(cur, keyUsage(t, s, mgmt, a.hash))
		}
		if slices.Equal(cur, last) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the keys' usage still changes %v after the restart: %v, then %v", when, waitLimit, last, cur)
		}
		last = cur
	}
	for i, a := range l.accounts {
		l.ledger(t, s, a)
		a.check(t, when+": key "+a.name+" (API)", last[i], a.limit)
	}
}

// keyUsage reads a key's all-time usage with GET /keys/{hash}, exactly.
func keyUsage(t *testing.T, s *testServer, mgmt, hash string) gatehouse.Money {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+"/api/v1/keys/"+hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+mgmt)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Usage *gatehouse.Money `json:"usage"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || body.Data.Usage == nil {
		t.Fatalf("GET /keys/%s: %d, usage %v (%v)", hash, resp.StatusCode, body.Data.Usage, err)
	}
	return *body.Data.Usage
}

// checkStore checks the keys' and the budgets' usage in the database of
// the stopped server.
func (l *meterLoad) checkStore(t *testing.T, dbURL string) {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey()) // no secret is read
	if err != nil {
		t.Fatal(err)
	}
	store := openDatabase(t, dbURL, box)
	defer store.Close()
	ctx, now := context.Background(), time.Now()
	for _, a := range l.accounts {
		k, err := store.FindKeyByHash(ctx, a.hash)
		if err != nil {
			t.Fatalf("key %s: %v", a.name, err)
		}
		a.check(t, "in the database: key "+a.name, k.Usage.At(now).Total, a.limit)
		if a.guardrail == "" {
			continue
		}
		u, _, err := store.BudgetUsage(ctx, a.guardrail, gatehouse.KeySubject(a.hash))
		if err != nil {
			t.Fatalf("guardrail %s: %v", a.name, err)
		}
		a.check(t, "in the database: guardrail "+a.name+"'s budget", u.Total, 0)
		if u.Monthly > a.budget {
			t.Errorf("in the database: guardrail %s's budget: $%s spent this month, over its limit of $%s", a.name, u.Monthly, a.budget)
		}
	}
}

// check checks one recorded figure of a's spending against what its
// clients saw, and against limit (0: none).
func (a *meterAccount) check(t *testing.T, what string, got, limit gatehouse.Money) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	saw := fmt.Sprintf("%d answers received cost $%s, and were charged at most $%s by the ledger (%d charged their reservation, %d not in it); "+
		"%d calls in flight at kills reserved $%s; %d refused",
		a.nReceived, a.received, a.charged, a.nPartial, a.nMissing, a.nInFlight, a.inFlight, a.nRefused)
	switch {
	case got < a.received:
		t.Errorf("%s: $%s recorded, less than the answers received: answers went unpaid (%s)", what, got, saw)
	case got > a.charged+a.inFlight:
		t.Errorf("%s: $%s recorded, more than the answers received were charged in the ledger plus the calls in flight at kills reserved: charged for what was not served (%s)", what, got, saw)
	}
	if limit != 0 && got > limit {
		t.Errorf("%s: $%s recorded, over its limit of $%s (%s)", what, got, limit, saw)
	}
}
