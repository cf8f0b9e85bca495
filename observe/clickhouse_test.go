package observe

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// startClickHouse runs a ClickHouse server of its own for the test (the
// clickhouse-server package), on a free port, with a user "writer"; it
// skips the test when none is installed (TestEveryTypeDeliversToItsStandIn
// covers ClickHouse's HTTP interface with a stand-in then).
func startClickHouse(t *testing.T) string {
	bin, err := exec.LookPath("clickhouse-server")
	if err != nil {
		t.Skip("clickhouse-server is not installed (apt-get install clickhouse-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	config := fmt.Sprintf(`<yandex><logger><level>warning</level><console>1</console></logger>
<http_port>%d</http_port><listen_host>127.0.0.1</listen_host><path>%s/data/</path><tmp_path>%s/tmp/</tmp_path>
<users_config>%s/users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database>
<mark_cache_size>536870912</mark_cache_size></yandex>`, port, dir, dir, dir)
	users := `<yandex><profiles><default></default></profiles><quotas><default></default></quotas><users>
<writer><password>ch-SECRET</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></writer>
</users></yandex>`
	for name, body := range map[string]string{"config.xml": config, "users.xml": users} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--config-file="+filepath.Join(dir, "config.xml"))
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := clickHouseQuery(u, "SELECT 1"); err == nil {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatal("clickhouse-server did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func clickHouseQuery(base, q string) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/?"+url.Values{"query": {q}}.Encode(), nil)
	req.Header.Set("X-ClickHouse-User", "writer")
	req.Header.Set("X-ClickHouse-Key", "ch-SECRET")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d: %s", resp.StatusCode, b)
	}
	return string(b), nil
}

// TestClickHouseServer delivers to a real ClickHouse server: the table is
// made, the row arrives with its values, and a generation sent twice is
// one row once the ReplacingMergeTree has merged (FINAL).
func TestClickHouseServer(t *testing.T) {
	base := startClickHouse(t)
	db := fmt.Sprintf("gh_%x", gatehouse.NewSecretKey()[:6])
	if _, err := clickHouseQuery(base, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = clickHouseQuery(base, "DROP DATABASE "+db) })
	cfg, err := (gatehouse.DestinationConfig{}).Merge("clickhouse", patchOf(map[string]string{
		"host": base, "database": db, "username": "writer", "password": "ch-SECRET", "table": "traces"}))
	if err != nil {
		t.Fatal(err)
	}
	d := testDest("clickhouse", nil, func(d *gatehouse.Destination) { d.Config = cfg })
	p, reg := start(t, newLister(d), fastOptions())
	ev := testEvent(withSession("sess-ch"))
	p.Publish(ev)
	p.Publish(ev) // the same generation again
	closeNow(t, p)
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != 2 {
		t.Fatalf("delivered = %v, want 2; status %+v", got, p.localStatus(d.ID))
	}
	out, err := clickHouseQuery(base, "SELECT id, model, session_id, prompt_tokens, total_cost, output FROM "+db+".traces FINAL FORMAT JSONEachRow")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d rows, want 1 (FINAL): %s", len(lines), out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got["id"] != ev.Generation.ID || got["model"] != "openai/gpt-4o-mini" || got["session_id"] != "sess-ch" ||
		fmt.Sprint(got["prompt_tokens"]) != "12" || got["output"] != "secret completion" || fmt.Sprint(got["total_cost"]) != "0.000123" {
		t.Errorf("row = %v", got)
	}
}
