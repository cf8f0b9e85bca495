// Package deploy holds what runs Gatehouse as a service: the systemd unit
// and the sysusers file here, and the repository's Dockerfile. Its tests
// check them with the tools that read them, when this machine has them:
// systemd-analyze for the unit, podman for the image (built, started,
// probed, stopped and restarted). Without a tool its test skips, saying so.
package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gatehouseBinary builds the command into a temporary directory.
func gatehouseBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gatehouse")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/gatehouse")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/gatehouse: %v\n%s", err, out)
	}
	return bin
}

// run runs a command and returns its combined output and error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestSystemdUnit: deploy/gatehouse.service passes systemd-analyze verify
// (with its ExecStart pointed at a freshly built binary, which verify
// requires to exist) and scores an exposure of at most 1.5 out of 10 in
// systemd-analyze security (10 is an unsandboxed service); the sysusers
// file reads.
func TestSystemdUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed: the unit is not checked here")
	}
	unit, err := os.ReadFile("gatehouse.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"User=gatehouse", "StateDirectory=gatehouse", "ProtectSystem=strict", "NoNewPrivileges=yes",
		"CapabilityBoundingSet=\n", "SystemCallFilter=@system-service", "ExecStart=/usr/local/bin/gatehouse serve",
		"Environment=GATEHOUSE_DATABASE_URL=/var/lib/gatehouse/gatehouse.db", "EnvironmentFile=-/etc/gatehouse/gatehouse.env"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	local := filepath.Join(dir, "gatehouse.service")
	os.WriteFile(local, bytes.ReplaceAll(unit, []byte("/usr/local/bin/gatehouse"), []byte(gatehouseBinary(t))), 0o644)
	if out, err := run(ctx, "systemd-analyze", "verify", local); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := run(ctx, "systemd-analyze", "security", "--offline=yes", "--no-pager", local)
	m := regexp.MustCompile(`Overall exposure level for gatehouse.service: ([0-9.]+)`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	if exposure, _ := strconv.ParseFloat(m[1], 64); exposure > 1.5 {
		t.Errorf("exposure %s, want at most 1.5:\n%s", m[1], out)
	}
	t.Logf("systemd-analyze security: exposure %s", m[1])
	if _, err := exec.LookPath("systemd-sysusers"); err == nil {
		abs, _ := filepath.Abs("gatehouse.sysusers")
		out, err := run(ctx, "systemd-sysusers", "--dry-run", "--root="+t.TempDir(), abs)
		if err != nil || !strings.Contains(out, "Creating user 'gatehouse'") {
			t.Errorf("systemd-sysusers --dry-run gatehouse.sysusers: %v\n%s", err, out)
		}
	}
}

// TestDockerfileStampsVersion: the Dockerfile's go build, run as it is
// written with its build arguments set (its context has no .git for the
// toolchain to read), makes a binary that says which commit it is.
func TestDockerfileStampsVersion(t *testing.T) {
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.ReplaceAll(string(dockerfile), "\\\n", " ")
	m := regexp.MustCompile(`go build -ldflags="([^"]+)" -o /out/gatehouse ./cmd/gatehouse`).FindStringSubmatch(joined)
	if m == nil {
		t.Fatal("the Dockerfile has no go build -ldflags=\"...\" of ./cmd/gatehouse")
	}
	args := map[string]string{"VERSION": "", "REVISION": "2408d77d2e4f2f285434e36b631ce9169bd2b8a6",
		"VCS_TIME": "2026-11-25T03:52:28Z", "MODIFIED": ""}
	ldflags := strings.Join(strings.Fields(os.Expand(m[1], func(name string) string {
		v, ok := args[name]
		if !ok {
			t.Fatalf("the Dockerfile's ldflags use ${%s}, which is no build argument of this test", name)
		}
		return v
	})), " ")
	for name := range args {
		if !regexp.MustCompile(`(?m)^ARG .*\b` + name + `=`).MatchString(string(dockerfile)) {
			t.Errorf("the Dockerfile declares no ARG %s", name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "gatehouse")
	if out, err := run(ctx, "go", "build", "-buildvcs=false", "-ldflags="+ldflags, "-o", bin, "../cmd/gatehouse"); err != nil {
		t.Fatalf("go build -ldflags=%q: %v\n%s", ldflags, err, out)
	}
	out, err := run(ctx, bin, "--version")
	want := "gatehouse v0.0.0-20261125035228-2408d77d2e4f (revision 2408d77d2e4f2f285434e36b631ce9169bd2b8a6 of 2026-11-25T03:52:28Z) go"
	if err != nil || !strings.HasPrefix(out, want) {
		t.Errorf("--version of the image's build: %v %q, want %q…", err, out, want)
	}
}
