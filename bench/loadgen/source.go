package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// spec is one request shape. Its path and body may hold the placeholder
// {{.N}}, replaced by the request's sequence number (0, 1, 2, ...).
type spec struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body,omitempty"`
}

const placeholder = "{{.N}}"

// sentinel stands for the placeholder while a requests line is parsed as JSON.
const sentinel = "918273645546372819"

// source hands out the requests of a run in order, rotating through its
// specs; with once, each spec is used at most once and the source then runs
// dry.
type source struct {
	base   string
	specs  []spec
	header http.Header
	once   bool
	next   atomic.Int64
}

// take returns the sequence number and spec of the next request; ok is
// false when a once-source has run dry.
func (s *source) take() (n int64, sp *spec, ok bool) {
	n = s.next.Add(1) - 1
	if s.once && n >= int64(len(s.specs)) {
		return n, nil, false
	}
	return n, &s.specs[n%int64(len(s.specs))], true
}

// request builds the n-th request of sp.
func (s *source) request(n int64, sp *spec) (*http.Request, error) {
	path, body := sp.Path, []byte(sp.Body)
	if strings.Contains(path, placeholder) || bytes.Contains(body, []byte(placeholder)) {
		num := strconv.FormatInt(n, 10)
		path = strings.ReplaceAll(path, placeholder, num)
		body = bytes.ReplaceAll(body, []byte(placeholder), []byte(num))
	}
	var rd *bytes.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequest(sp.Method, s.base+path, rd)
	} else {
		req, err = http.NewRequest(sp.Method, s.base+path, nil)
	}
	if err != nil {
		return nil, err
	}
	req.Header = s.header.Clone()
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// sourceOptions are the flags that shape the requests.
type sourceOptions struct {
	url, method, body, bodyFile, pathsFile, requestsFile string
	headers                                              []string
	once                                                 bool
}

// newSource builds the source the flags describe: with -paths-file or
// -requests-file, -url is the base every path is appended to; otherwise
// -url is the one URL requested.
func newSource(o sourceOptions) (*source, error) {
	if o.url == "" {
		return nil, errors.New("-url is required")
	}
	header := http.Header{}
	for _, h := range o.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("-header %q: want \"Name: value\"", h)
		}
		header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	body := []byte(o.body)
	if o.bodyFile != "" {
		b, err := os.ReadFile(o.bodyFile)
		if err != nil {
			return nil, err
		}
		body = bytes.TrimRight(b, "\r\n")
	}
	s := &source{header: header, once: o.once}
	switch {
	case o.pathsFile != "" && o.requestsFile != "":
		return nil, errors.New("-paths-file and -requests-file exclude each other")
	case o.pathsFile != "":
		lines, err := readLines(o.pathsFile)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			s.specs = append(s.specs, spec{Method: o.method, Path: l, Body: body})
		}
		s.base = strings.TrimRight(o.url, "/")
	case o.requestsFile != "":
		lines, err := readLines(o.requestsFile)
		if err != nil {
			return nil, err
		}
		for i, l := range lines {
			// {{.N}} may stand where JSON wants a value: parse with a
			// number in its place, then put it back.
			l = strings.ReplaceAll(l, placeholder, sentinel)
			var sp spec
			err := json.Unmarshal([]byte(l), &sp)
			sp.Path = strings.ReplaceAll(sp.Path, sentinel, placeholder)
			sp.Body = bytes.ReplaceAll(sp.Body, []byte(sentinel), []byte(placeholder))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v (want {\"method\":..., \"path\":..., \"body\":...})", o.requestsFile, i+1, err)
			}
			if sp.Method == "" {
				sp.Method = o.method
			}
			s.specs = append(s.specs, sp)
		}
		s.base = strings.TrimRight(o.url, "/")
	default:
		s.specs = []spec{{Method: o.method, Path: o.url, Body: body}}
	}
	if len(s.specs) == 0 {
		return nil, errors.New("no requests: the paths or requests file is empty")
	}
	return s, nil
}

// readLines returns the non-empty lines of a file.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
