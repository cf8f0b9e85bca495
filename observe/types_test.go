package observe

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// TestRegistryCoversEveryType fails when the domain accepts a destination
// type that has no delivery here, or the registry has one the domain does
// not accept.
func TestRegistryCoversEveryType(t *testing.T) {
	domain := gatehouse.DestinationTypes()
	if len(domain) != 17 {
		t.Errorf("the domain has %d types, want 17", len(domain))
	}
	for _, typ := range domain {
		if deliverer(typ) == nil {
			t.Errorf("type %q is accepted but has no delivery in observe/types.go", typ)
		}
	}
	for typ := range registry {
		if !slices.Contains(domain, typ) {
			t.Errorf("the registry delivers %q, which the domain does not accept", typ)
		}
	}
	if got := DeliveredTypes(); !slices.Equal(got, domain) {
		t.Errorf("DeliveredTypes() = %v, want every type %v", got, domain)
	}
	for _, ty := range Types() {
		if ty.Label == "" || ty.Sends == "" || len(ty.Required) == 0 {
			t.Errorf("type %q lacks a label, a description or keys: %+v", ty.Name, ty)
		}
		addr := false
		for _, k := range slices.Concat(ty.Required, ty.Optional) {
			addr = addr || gatehouse.IsAddressConfigKey(k)
		}
		if !addr {
			t.Errorf("type %q has no key naming where it delivers: a self-hosted service or a stand-in cannot receive it", ty.Name)
		}
	}
}

// TestDocumentsListEveryType: the OpenAPI document's enum of types and the
// README's table of destinations name exactly the registry's types.
func TestDocumentsListEveryType(t *testing.T) {
	raw, err := os.ReadFile("../httpapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := DeliveredTypes()
	if got := doc.Components.Schemas["DestinationType"].Enum; !slices.Equal(got, want) {
		t.Errorf("openapi.json DestinationType enum = %v, want %v", got, want)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "### Observability delivery\n")
	section, _, _ = strings.Cut(section, "\n**Delivery that loses nothing.**")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| [^|]+ \\| [^|]+ \\|$").FindAllStringSubmatch(section, -1) {
		rows = append(rows, m[1])
	}
	slices.Sort(rows)
	if !slices.Equal(rows, want) {
		t.Errorf("README destination table rows = %v, want one per type %v", rows, want)
	}
}

// standIn is a local stand-in of a service's ingestion endpoint: it checks
// what the service checks and answers as it does, and keeps what it
// accepted.
type standIn struct {
	*httptest.Server
	mu       sync.Mutex
	accepted []hit
	refused  []string
}

// newStandIn serves check: an error refuses the request with the status
// the service would use (an *httpError) or 400.
func newStandIn(t *testing.T, check func(r *http.Request, body []byte) error) *standIn {
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := check(r, body); err != nil {
			code := http.StatusBadRequest
			if he, ok := err.(*httpError); ok {
				code = he.code
			}
			s.mu.Lock()
			s.refused = append(s.refused, fmt.Sprintf("%s %s: %d %v", r.Method, r.URL, code, err))
			s.mu.Unlock()
			http.Error(w, `{"error":"`+err.Error()+`"}`, code)
			return
		}
		s.mu.Lock()
		s.accepted = append(s.accepted, hit{r.Method, r.URL.RequestURI(), r.Header.Clone(), body, time.Now()})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) got() ([]hit, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accepted), slices.Clone(s.refused)
}

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func unauthorized(format string, a ...any) error {
	return &httpError{http.StatusUnauthorized, fmt.Sprintf(format, a...)}
}

// expect checks the method, the path and the content type.
func expect(r *http.Request, method, path, contentType string) error {
	if r.Method != method || r.URL.Path != path {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no route %s %s (want %s %s)", r.Method, r.URL.Path, method, path)}
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, contentType) {
		return &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q, want %s", ct, contentType)}
	}
	return nil
}

// fields decodes a JSON object and checks that the paths (a.b.c, with
// [0] for the first element of an array) are present and not null.
func fields(body []byte, paths ...string) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %v", err)
	}
	for _, p := range paths {
		if lookup(m, p) == nil {
			return nil, fmt.Errorf("%s is required", p)
		}
	}
	return m, nil
}

// lookup reads a path (a.b[0].c) of decoded JSON; nil when absent.
func lookup(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if i := strings.Index(part, "["); i >= 0 {
			fmt.Sscanf(part[i:], "[%d]", &idx)
			part = part[:i]
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
		if idx >= 0 {
			arr, ok := v.([]any)
			if !ok || len(arr) <= idx {
				return nil
			}
			v = arr[idx]
		}
	}
	return v
}

// deliverTo sends one test event (session sess-9) to a destination and
// waits for the outcome; it fails the test unless it was delivered.
func deliverTo(t *testing.T, d *gatehouse.Destination) *gatehouse.TraceEvent {
	t.Helper()
	p, reg := start(t, newLister(d), fastOptions())
	ev := testEvent(withSession("sess-9"))
	p.Publish(ev)
	closeNow(t, p)
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != 1 {
		t.Errorf("%s: delivered = %v, want 1; status %+v", d.Type, got, p.localStatus(d.ID))
	}
	return ev
}
