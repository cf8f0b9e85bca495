package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"keep", 0}, {"KEEP", 0}, {" keep ", 0},
		{"90d", 90 * 24 * time.Hour}, {"1d", 24 * time.Hour},
		{"720h", 720 * time.Hour}, {"90m", 90 * time.Minute}, {"1s", time.Second}, {"1h30m", 90 * time.Minute},
	} {
		got, err := parseRetention("GATEHOUSE_LEDGER_RETENTION", tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseRetention(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"0", "0s", "0d", "-1d", "-5h", "forever", "90", "d", "1.5d", "500ms", "36501d", "90 days"} {
		if _, err := parseRetention("GATEHOUSE_AUDIT_RETENTION", in); err == nil || !strings.Contains(err.Error(), "GATEHOUSE_AUDIT_RETENTION") {
			t.Errorf("parseRetention(%q) = %v, want an error naming the setting", in, err)
		}
	}
}

// TestRetentionSettingsInvalid: a bad retention stops serve and the other
// commands before anything is created, naming the setting.
func TestRetentionSettingsInvalid(t *testing.T) {
	for _, name := range []string{"GATEHOUSE_LEDGER_RETENTION", "GATEHOUSE_AUDIT_RETENTION"} {
		db := filepath.Join(t.TempDir(), "g.db")
		vars := map[string]string{name: "0", "GATEHOUSE_ADDR": "127.0.0.1:0", "GATEHOUSE_DATABASE_URL": db}
		for _, args := range [][]string{{"serve"}, {"orgs", "create", "--name", "x"}} {
			_, _, err := cli(t, vars, args...)
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "keep") {
				t.Errorf("gatehouse %v with %s=0: %v, want an error naming it and keep", args, name, err)
			}
			if fileExists(db) || fileExists(db+".key") {
				t.Errorf("gatehouse %v touched the database despite %s=0", args, name)
			}
		}
	}
}

// TestRetentionWhileServing: with GATEHOUSE_AUDIT_RETENTION=1s the server
// prunes its audit log in the background (the entries of keys created
// more than a second ago go), while the keys themselves and the API are
// untouched; the log and /metrics say what went.
func TestRetentionWhileServing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	vars := map[string]string{"GATEHOUSE_AUDIT_RETENTION": "1s", "GATEHOUSE_LEDGER_RETENTION": "400d"}
	s := startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]
	line, ok := logLine(s.stderr.String(), "retention: pruning the logs in the background")
	if !ok || line["audit_retention"] != "1s" || line["ledger_retention"] != "9600h0m0s" {
		t.Errorf("retention start line = %v, want audit 1s and ledger 9600h0m0s", line)
	}
	var hashes []string
	for range 3 {
		status, body := s.do("POST", "/api/v1/keys", key, map[string]any{"name": "pruned audit"})
		if status != http.StatusCreated {
			t.Fatalf("POST /keys = %d %v", status, body)
		}
		data, _ := body["data"].(map[string]any)
		hashes = append(hashes, str(data["hash"]))
	}
	deadline := time.Now().Add(waitLimit)
	for {
		status, body := s.do("GET", "/api/v1/audit-log?resource_type=key", key, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /audit-log = %d %v", status, body)
		}
		if entries, _ := body["data"].([]any); len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key entries of the audit log were not pruned within %v: %v", waitLimit, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, h := range hashes {
		if status, body := s.do("GET", "/api/v1/keys/"+h, key, nil); status != http.StatusOK {
			t.Errorf("GET /keys/%s after pruning its audit entry = %d %v", h, status, body)
		}
	}
	// The pass logs what it pruned once its last batch is committed, which
	// may be just after the list above first read empty.
	for {
		if _, ok := logLine(s.stderr.String(), "retention: pruned old entries"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the pruned entries within %v:\n%s", waitLimit, s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, metrics := s.get("/metrics"); !strings.Contains(metrics, `gatehouse_retention_deleted_total{log="audit_log"}`) {
		t.Errorf("/metrics has no gatehouse_retention_deleted_total{log=\"audit_log\"}")
	}
}
