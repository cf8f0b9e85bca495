package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServesTheRecordedBytes(t *testing.T) {
	body := []byte("{\"data\":{\"hash\":\"ab\"}}\n")
	srv := httptest.NewServer(handler(body, http.StatusCreated, "application/json"))
	defer srv.Close()
	for _, path := range []string{"/api/v1/keys", "/anything/else?x=1"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"name":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || !bytes.Equal(got, body) ||
			resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength != int64(len(body)) {
			t.Fatalf("%s: %d %q %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), got)
		}
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
}
