package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// ErrLocked is the cause of ServeLock's and Lock's refusal: another process
// holds the database's lock.
var ErrLocked = errors.New("sqlite: another gatehouse process holds the database's lock")

// ServeLock makes this process the one that serves the database: its
// metering admits requests in memory, which is exact only while no other
// process spends from the same keys. The server takes it before it opens
// the database, so a second server on the same file is refused before it
// touches anything (a new release started beside the old one migrates
// nothing under it). The administrative commands (which do not serve)
// work beside it, except those that take the same lock (see Lock):
// rotate-secret-key and restore, and a command that would migrate the
// database. The lock is an advisory lock on path+"-serve.lock", released
// when the returned function runs or the process ends, however it ends.
func ServeLock(path string) (release func(), err error) {
	release, holder, err := Lock(path, "gatehouse serve")
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%w: %s is %s (it holds %s-serve.lock); "+
			"one process serves a SQLite database: stop it first, or use PostgreSQL to run several instances", ErrLocked, path, holder, path)
	}
	return release, err
}

// Lock takes the lock that ServeLock takes, for a process that must not
// run beside a server, nor a server beside it: what names itself (such as
// "gatehouse rotate-secret-key"), and is told to the processes it keeps
// out. When another process holds it, Lock returns ErrLocked and what that
// one named itself ("in use" when it said nothing). The lock file is the
// only thing Lock creates.
func Lock(path, what string) (release func(), holder string, err error) {
	name := path + "-serve.lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "in use"
			if b, err := os.ReadFile(name); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				holder = "in use by " + strings.TrimSpace(string(b))
			}
			return nil, holder, ErrLocked
		}
		return nil, "", fmt.Errorf("sqlite: lock %s: %w", name, err)
	}
	// Who holds it, for the processes it keeps out (advisory, like the lock).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%s (pid %d)\n", what, os.Getpid())), 0)
	}
	return func() { f.Close() }, "", nil
}
