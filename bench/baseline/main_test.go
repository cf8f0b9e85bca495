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

func TestProxyForwardsAsItCame(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("Authorization") + " " + string(body)))
	}))
	defer upstream.Close()
	h, _, err := newHandler(upstream.URL, "", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions?x=1", strings.NewReader(`{"model":"echo"}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `POST /v1/chat/completions?x=1 Bearer k {"model":"echo"}`
	if resp.StatusCode != http.StatusAccepted || string(got) != want {
		t.Fatalf("got %d %q, want 202 %q", resp.StatusCode, got, want)
	}
	if _, _, err := newHandler("127.0.0.1:8090", "", 0, ""); err == nil {
		t.Fatal("a proxy URL without a scheme was accepted")
	}
}
