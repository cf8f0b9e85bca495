package main

import (
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// pauseProxy forwards TCP connections to a target and can pause: while
// paused it accepts connections but moves no bytes in either direction, as
// a network partition does, so clients wait until their own timeouts.
type pauseProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	paused bool
	resume chan struct{}
	conns  []net.Conn
}

func newPauseProxy(t *testing.T, target string) *pauseProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pauseProxy{ln: ln, target: target, resume: make(chan struct{})}
	close(p.resume)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *pauseProxy) addr() string { return p.ln.Addr().String() }

func (p *pauseProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *pauseProxy) forward(client net.Conn) {
	p.gate()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, server)
	p.mu.Unlock()
	go p.pipe(server, client)
	p.pipe(client, server)
}

// pipe copies src to dst, waiting at the gate before every write.
func (p *pauseProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// gate blocks while the proxy is paused.
func (p *pauseProxy) gate() {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	<-ch
}

func (p *pauseProxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resume = true, make(chan struct{})
	}
}

func (p *pauseProxy) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resume)
	}
}

func (p *pauseProxy) close() {
	p.unpause()
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestDatabaseOutage: with the connection to PostgreSQL paused, requests
// answer 503 with the JSON error body within a bounded time, /readyz fails
// and /healthz still answers; once the connection is back, service resumes
// without a restart.
func TestDatabaseOutage(t *testing.T) {
	vars, mgmt := pgInstances(t)
	dbURL, err := url.Parse(vars["GATEHOUSE_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := newPauseProxy(t, dbURL.Host)
	dbURL.Host = proxy.addr()
	vars["GATEHOUSE_DATABASE_URL"] = dbURL.String()
	vars["GATEHOUSE_DB_TIMEOUT"] = "1s"
	s := startProcess(t, vars)
	s.client.Timeout = 30 * time.Second // the server must answer long before this

	if status, body := s.do("GET", "/api/v1/keys", mgmt, nil); status != http.StatusOK {
		t.Fatalf("before the outage: %d %v", status, body)
	}

	proxy.pause()
	const bound = 3 * time.Second // DB timeout 1s, plus the key lookup's own 1s, plus slack
	for _, path := range []string{"/api/v1/keys", "/api/v1/key", "/api/v1/workspaces"} {
		start := time.Now()
		status, body := s.do("GET", path, mgmt, nil)
		elapsed := time.Since(start)
		if status != http.StatusServiceUnavailable {
			t.Errorf("GET %s during the outage: %d %v, want 503", path, status, body)
		} else if e, _ := body["error"].(map[string]any); e == nil || e["code"] != float64(503) || e["message"] == "" {
			t.Errorf("GET %s: 503 without the JSON error body: %v", path, body)
		}
		if elapsed > bound {
			t.Errorf("GET %s took %v during the outage, want under %v", path, elapsed, bound)
		}
	}
	start := time.Now()
	if status, _ := s.get("/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the outage: %d, want 503", status)
	}
	if d := time.Since(start); d > bound {
		t.Errorf("/readyz took %v", d)
	}
	if status, _ := s.get("/healthz"); status != http.StatusOK {
		t.Errorf("/healthz during the outage: %d, want 200", status)
	}

	proxy.unpause()
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, _ := s.do("GET", "/api/v1/keys", mgmt, nil)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service did not resume within 15s of the database coming back (last status %d)\n%s", status, s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, _ := s.get("/readyz"); status != http.StatusOK {
		t.Errorf("/readyz after the outage: %d, want 200", status)
	}
}
