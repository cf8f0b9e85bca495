package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ServeLock makes this process the one that serves the database: its
// metering admits requests in memory, which is exact only while no other
// process spends from the same keys. A second server on the same file is
// refused; the administrative commands (which do not serve) work beside
// it. The lock is an advisory lock on path+"-serve.lock", released when
// the returned function runs or the process ends, however it ends.
func ServeLock(path string) (release func(), err error) {
	name := path + "-serve.lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: serve lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sqlite: another gatehouse process is serving %s (it holds %s); "+
				"one process serves a SQLite database: stop it first, or use PostgreSQL to run several instances", path, name)
		}
		return nil, fmt.Errorf("sqlite: serve lock %s: %w", name, err)
	}
	return func() { f.Close() }, nil
}
