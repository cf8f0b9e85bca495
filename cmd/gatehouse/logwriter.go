package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logWriter buffers log lines and writes them in batches: one write
// syscall per request was a tenth of the CPU of a cheap request. Lines
// reach the output within flushEvery, at once when the buffer fills, and
// all of them on Close. A crash can lose the last flushEvery of lines; the
// log is for operators, and the database, not the log, is the record.
type logWriter struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

const (
	logBufferSize = 256 << 10
	flushEvery    = 100 * time.Millisecond
)

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{buf: bufio.NewWriterSize(w, logBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go l.flusher()
	return l
}

// Write buffers one line (slog writes each record with one call).
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logWriter) flusher() {
	defer close(l.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.flush()
		case <-l.stop:
			l.flush()
			return
		}
	}
}

func (l *logWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.buf.Flush()
}

// Close writes what is buffered and stops the flusher.
func (l *logWriter) Close() {
	close(l.stop)
	<-l.done
}
