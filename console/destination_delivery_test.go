package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
)

// TestDestinationDeliveries: a destination's page shows how deliveries to
// it went (a chat completion's generation counted as sent) and sends it a
// test event, saying what its service answered.
func TestDestinationDeliveries(t *testing.T) {
	var received atomic.Int64
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(svc.Close)
	e := newEnv(t, withPublisher)
	ctx := context.Background()
	u := svc.URL + "/in"
	d, err := e.store.CreateDestination(ctx, e.org.ID, gatehouse.DestinationCreate{Type: "webhook",
		DestinationUpdate: gatehouse.DestinationUpdate{Name: gatehouse.Val("Hooks"), Config: &gatehouse.ConfigPatch{Values: map[string]*string{"url": &u}}}})
	if err != nil {
		t.Fatal(err)
	}
	var key struct {
		Key string `json:"key"`
	}
	if status := e.api("POST", "/keys", e.mgmt, map[string]any{"name": "traced"}, &key); status != http.StatusCreated {
		t.Fatalf("create key: %d", status)
	}
	if status := e.chat(key.Key, "hello"); status != http.StatusOK {
		t.Fatalf("chat: %d", status)
	}
	c := e.client()
	c.signInWithKey()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.wantStatus(c.get("/destinations/"+d.ID), http.StatusOK)
		if strings.Contains(c.page, `<dd id="delivery-sent">1</dd>`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page does not show the delivery sent:\n%s", c.page)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(c.page, "Deliveries") || !strings.Contains(c.page, `<dd id="delivery-error">none</dd>`) {
		t.Errorf("the deliveries panel:\n%s", c.page)
	}
	c.wantStatus(c.post("/destinations/"+d.ID+"/test", url.Values{}), http.StatusOK)
	if !strings.Contains(c.page, "The test event arrived: the service answered 200") {
		t.Errorf("after the test:\n%s", c.page)
	}
	if received.Load() != 2 {
		t.Errorf("the service received %d requests, want the generation and the test", received.Load())
	}
}
