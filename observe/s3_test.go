package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// checkSigV4 verifies a request's AWS Signature Version 4 as S3 does:
// it signs the request again with the secret, over the headers it names,
// and compares the signatures.
func checkSigV4(r *http.Request, body []byte, accessKey, secret, region string) error {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+accessKey+"/") {
		return fmt.Errorf("InvalidAccessKeyId or no SigV4: %q", auth)
	}
	signed := ""
	for _, part := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ", ") {
		if v, ok := strings.CutPrefix(part, "SignedHeaders="); ok {
			signed = v
		}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %v", err)
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	again.ContentLength = r.ContentLength
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secret},
		again, r.Header.Get("X-Amz-Content-Sha256"), "s3", region, at)
	if err != nil {
		return err
	}
	if again.Header.Get("Authorization") != auth {
		return fmt.Errorf("SignatureDoesNotMatch")
	}
	return nil
}

// TestS3Delivery puts a JSON Lines object in an in-process S3 server
// (gofakes3) under the path template, signed with SigV4, which the test
// verifies before the server stores anything.
func TestS3Delivery(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("traces"); err != nil {
		t.Fatal(err)
	}
	fake := gofakes3.New(backend).Server()
	var mu sync.Mutex
	var refused []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := checkSigV4(r, body, "AKIATEST", "s3-SECRET", "eu-west-1"); err != nil {
			mu.Lock()
			refused = append(refused, err.Error())
			mu.Unlock()
			http.Error(w, "<Error><Code>SignatureDoesNotMatch</Code></Error>", http.StatusForbidden)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	values := map[string]string{"accessKeyId": "AKIATEST", "secretAccessKey": "s3-SECRET", "bucketName": "traces",
		"endpoint": srv.URL, "region": "eu-west-1", "pathTemplate": "{prefix}/{workspace_id}/{year}/{month}/{day}"}
	cfg, err := (gatehouse.DestinationConfig{}).Merge("s3", patchOf(values))
	if err != nil {
		t.Fatal(err)
	}
	d := testDest("s3", nil, func(d *gatehouse.Destination) { d.Config = cfg })
	ev := deliverTo(t, d)
	if len(refused) > 0 {
		t.Fatalf("refused: %v", refused)
	}
	key := "openrouter-traces/ws-1/2026/11/21/" + ev.Generation.ID + ".jsonl"
	obj, err := backend.GetObject("traces", key, nil)
	if err != nil {
		t.Fatalf("object %s: %v", key, err)
	}
	defer obj.Contents.Close()
	body, _ := io.ReadAll(obj.Contents)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1: %s", len(lines), body)
	}
	var p WebhookPayload
	if err := json.Unmarshal([]byte(lines[0]), &p); err != nil || p.ID != ev.Generation.ID || p.TotalTokens != 46 || p.Output == nil {
		t.Errorf("line %s (%v)", lines[0], err)
	}
}
