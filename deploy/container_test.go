package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The image test builds the repository's Dockerfile with podman and runs
// it. The Dockerfile's build stage starts FROM a Go toolchain image
// (GO_IMAGE); this machine reaches no container registry, so the test
// builds a stand-in for it from this machine's own Debian and Go (mounted
// read-only into the build, as the golang image ships them), and mounts
// the module and build caches. Everything after FROM is the Dockerfile
// as users build it.

// podmanFlagSets are tried in order until one runs a container: the
// defaults, then runc with lowered limits (in this sandbox crun cannot
// set up a hybrid cgroup hierarchy and neither runtime may raise
// RLIMIT_NOFILE or RLIMIT_NPROC).
var podmanFlagSets = [][]string{
	nil,
	{"--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"},
}

type podman struct {
	t     *testing.T
	ctx   context.Context
	flags []string // for build and run
}

func (p *podman) run(args ...string) (string, error) { return run(p.ctx, "podman", args...) }

func (p *podman) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestContainerImage builds the image, starts it on a named volume, and
// checks: the health check passes and says healthy; the process runs as
// 65532; the first start prints a management key that works through the
// published port; the database and its key are in /data, owned by 65532,
// mode 0600; `gatehouse backup` runs inside the container; SIGTERM stops it
// cleanly (exit 0, "stopped"); a restart on the same volume keeps the data
// and prints no new key.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image: skipped with -short")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (apt-get install podman runc): the image is not built here")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{"/usr/bin/sh", "/usr/bin/mkdir"} {
		if _, err := os.Stat(shell); err != nil {
			t.Skipf("the stand-in Go image mounts /usr with a shell in /usr/bin: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	p := &podman{t: t, ctx: ctx}
	goImage := p.standInGoImage()
	p.pickFlags(goImage)

	suffix := randomSuffix()
	image, name, volume := "localhost/gatehouse-test:"+suffix, "gatehouse-test-"+suffix, "gatehouse-test-"+suffix
	t.Cleanup(func() {
		cleanup, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		run(cleanup, "podman", "rm", "-f", name)
		run(cleanup, "podman", "volume", "rm", "-f", volume)
		run(cleanup, "podman", "rmi", "-f", image)
	})
	revision, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	vcsTime, _ := exec.Command("git", "show", "-s", "--format=%cI", "HEAD").Output()
	p.build(image, goImage, strings.TrimSpace(string(goroot)), strings.TrimSpace(string(revision)), strings.TrimSpace(string(vcsTime)))
	p.must("volume", "create", volume)
	port := freePort(t)
	args := append([]string{"run", "-d", "--name", name, "-p", fmt.Sprintf("127.0.0.1:%d:8080", port), "-v", volume + ":/data"}, p.flags...)
	p.must(append(args, image)...)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p.waitHealthy(base, name)
	// The image says which commit it is (the build arguments; its build
	// context has no .git).
	if health := get(t, base+"/healthz"); strings.TrimSpace(string(revision)) != "" &&
		(health["revision"] != strings.TrimSpace(string(revision)) || !strings.HasPrefix(fmt.Sprint(health["version"]), "v0.0.0-")) {
		t.Errorf("GET /healthz of the image = %v, want revision %s and its pseudo-version", health, revision)
	}

	logs := p.must("logs", name)
	keys := regexp.MustCompile(`sk-gh-mgmt-v1-[0-9a-f]{64}`).FindAllString(logs, -1)
	if len(keys) != 1 {
		t.Fatalf("the first start printed %d management keys, want 1:\n%s", len(keys), logs)
	}
	if status := request(t, "POST", base+"/api/v1/keys", keys[0], `{"name":"from the host"}`); status != http.StatusCreated {
		t.Errorf("POST /keys through the published port = %d", status)
	}
	if out := p.must("healthcheck", "run", name); strings.TrimSpace(out) != "" && !strings.Contains(out, "healthy") {
		t.Logf("podman healthcheck run: %s", out)
	}
	if got := strings.TrimSpace(p.must("inspect", "--format", "{{.State.Health.Status}} {{.Config.User}}", name)); !strings.HasPrefix(got, "healthy 65532:65532") {
		t.Errorf("health and user = %q, want healthy 65532:65532", got)
	}
	if top := p.must("top", name, "user"); !strings.Contains(top, "65532") {
		t.Errorf("the process does not run as 65532:\n%s", top)
	}
	if out := p.must("exec", name, "/usr/local/bin/gatehouse", "backup", "--to", "/data/backup.db"); !strings.Contains(out, "Backed up /data/gatehouse.db") {
		t.Errorf("gatehouse backup inside the container:\n%s", out)
	}
	p.checkVolume(volume)

	p.must("stop", "-t", "30", name)
	if code := strings.TrimSpace(p.must("inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
		t.Errorf("exit code after SIGTERM = %s, want 0", code)
	}
	if logs := p.must("logs", name); !strings.Contains(logs, `"msg":"stopped"`) {
		t.Errorf("no stopped line after SIGTERM:\n%s", logs)
	}
	p.must("start", name)
	p.waitHealthy(base, name)
	if status := request(t, "GET", base+"/api/v1/key", keys[0], ""); status != http.StatusOK {
		t.Errorf("GET /key after a restart on the same volume = %d, want 200", status)
	}
	if n := len(regexp.MustCompile(`sk-gh-mgmt-v1-[0-9a-f]{64}`).FindAllString(p.must("logs", name), -1)); n != 1 {
		t.Errorf("after a restart the logs hold %d management keys, want the first start's alone", n)
	}
}

// standInGoImage builds the stand-in for GO_IMAGE: this machine's /usr
// (mounted at build time) under symlinks as Debian lays them out, its CA
// certificates, an empty /tmp, and the Go environment of the golang image.
func (p *podman) standInGoImage() string {
	dir := p.t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"tmp", "usr", "etc/ssl/certs", "go/pkg/mod", "root/.cache/go-build"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	for link, target := range map[string]string{"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin"} {
		os.Symlink(target, filepath.Join(root, link))
	}
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		p.t.Skipf("the stand-in Go image needs this machine's CA certificates: %v", err)
	}
	os.WriteFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"), certs, 0o644)
	os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(`FROM scratch
COPY root /
ENV PATH=/opt/go/bin:/usr/local/go/bin:/go/bin:/usr/local/bin:/usr/bin:/bin GOPATH=/go GOMODCACHE=/go/pkg/mod GOCACHE=/root/.cache/go-build GOTOOLCHAIN=local HOME=/root
`), 0o644)
	image := "localhost/gatehouse-test-go:stand-in"
	p.must("build", "-q", "-t", image, dir)
	return image
}

// pickFlags finds the flags with which podman runs a container here, or
// skips the test with what each attempt said.
func (p *podman) pickFlags(image string) {
	var tried []string
	for _, flags := range podmanFlagSets {
		args := append(append([]string{"run", "--rm", "-v", "/usr:/usr:ro"}, flags...), image, "/usr/bin/true")
		out, err := p.run(args...)
		if err == nil {
			p.flags = flags
			return
		}
		tried = append(tried, fmt.Sprintf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out)))
	}
	p.t.Skipf("podman cannot run a container on this machine:\n%s", strings.Join(tried, "\n"))
}

// build builds the Dockerfile at the repository's root, in Docker's
// format (podman's OCI format drops HEALTHCHECK).
func (p *podman) build(image, goImage, goroot, revision, vcsTime string) {
	p.t.Helper()
	gocache, _ := exec.Command("go", "env", "GOCACHE").Output()
	gomodcache, _ := exec.Command("go", "env", "GOMODCACHE").Output()
	args := []string{"build", "--format", "docker", "--layers=false", "--network", "host", "-t", image,
		"--build-arg", "GO_IMAGE=" + goImage, "--build-arg", "REVISION=" + revision, "--build-arg", "VCS_TIME=" + vcsTime,
		"-v", "/usr:/usr:ro", "-v", goroot + ":/opt/go:ro",
		"-v", strings.TrimSpace(string(gomodcache)) + ":/go/pkg/mod",
		"-v", strings.TrimSpace(string(gocache)) + ":/root/.cache/go-build"}
	args = append(append(args, p.flags...), "-f", "../Dockerfile", "..")
	start := time.Now()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	p.t.Logf("built %s in %v", image, time.Since(start).Round(time.Second))
}

// waitHealthy waits until GET /healthz answers 200 through the published
// port, failing with the container's logs if it does not within a minute.
func (p *podman) waitHealthy(base, name string) {
	p.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			logs, _ := p.run("logs", name)
			p.t.Fatalf("GET /healthz did not answer 200 within a minute (%v)\n%s", err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkVolume: the database, its secret key and the backup are in the
// volume, owned by 65532 and readable by their owner only.
func (p *podman) checkVolume(volume string) {
	p.t.Helper()
	var mounts []struct{ Mountpoint string }
	if err := json.Unmarshal([]byte(p.must("volume", "inspect", volume)), &mounts); err != nil || len(mounts) != 1 {
		p.t.Fatalf("podman volume inspect: %v", err)
	}
	for _, f := range []string{"gatehouse.db", "gatehouse.db.key", "backup.db", "backup.db.key"} {
		fi, err := os.Stat(filepath.Join(mounts[0].Mountpoint, f))
		if err != nil {
			p.t.Errorf("%s in the volume: %v", f, err)
			continue
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != 0o600 || st == nil || st.Uid != 65532 || st.Gid != 65532 {
			p.t.Errorf("%s: mode %v, owner %+v; want 0600 and 65532:65532", f, fi.Mode().Perm(), st)
		}
	}
}

// get fetches a JSON object; nil when it cannot.
func get(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return nil
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
	return out
}

// request sends a request with a bearer key and returns the status.
func request(t *testing.T, method, url, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
