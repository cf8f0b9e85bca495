package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gatehouse"
)

// TestVersion: --version, -version and version print the build on stdout.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		out, errOut, err := cli(t, nil, arg)
		if err != nil || out != gatehouse.Build().String()+"\n" || errOut != "" {
			t.Errorf("gatehouse %s = %q, %q, %v; want %q", arg, out, errOut, err, gatehouse.Build().String())
		}
	}
	if _, _, err := cli(t, nil, "version", "now"); err == nil || exitCode(err) != 2 {
		t.Errorf("gatehouse version now: %v, want a usage error", err)
	}
}

// TestVersionOfABuiltBinary builds the binary as the README says (go build
// -o, from a clone) and checks that --version names the commit checked out.
// The Go toolchain stamps the commit only in a clone (a directory .git), not
// in a git worktree (a file .git), so the test needs one.
func TestVersionOfABuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		t.Skipf("%s is not a git clone (no .git directory; a worktree's .git is a file): the Go toolchain stamps no commit there", root)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gatehouse")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/gatehouse")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("gatehouse --version: %v", err)
	}
	rev := strings.TrimSpace(string(head))
	if !strings.HasPrefix(string(out), "gatehouse v") || !strings.Contains(string(out), "(revision "+rev) {
		t.Errorf("gatehouse --version = %q, want a module version and revision %s", out, rev)
	}
}
