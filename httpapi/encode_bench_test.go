package httpapi

import (
	"net/http"
	"testing"
	"time"

	"gatehouse"
)

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

func benchKey() *gatehouse.Key {
	now := time.Now().UTC()
	limit := gatehouse.USD(25)
	creator := "user_abcdefghijklmnopqrst"
	k := &gatehouse.Key{
		Hash: gatehouse.HashKey(gatehouse.NewKeySecret(false)), OrganizationID: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		WorkspaceID: "0d3f9b8e-1c2a-4b5d-8e7f-9a0b1c2d3e4f", Name: "ci-main", Limit: &limit, LimitReset: gatehouse.Weekly,
		CreatorUserID: &creator, CreatedAt: now.Add(-time.Hour), UpdatedAt: &now,
	}
	k.Usage = k.Usage.Add(now, gatehouse.USD(2))
	return k
}

func benchGuardrail() *gatehouse.Guardrail {
	now := time.Now().UTC()
	limit := gatehouse.USD(50)
	desc := "No frontier models"
	return &gatehouse.Guardrail{
		ID: "5c0a3b5e-7f1d-4c36-9a57-6c1f4f0e2b71", OrganizationID: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		WorkspaceID: "0d3f9b8e-1c2a-4b5d-8e7f-9a0b1c2d3e4f", Name: "no-frontier", Description: &desc,
		AllowedProviders: []string{"openai", "anthropic"}, IgnoredModels: []string{"openai/o1-pro"},
		LimitUSD: &limit, ResetInterval: gatehouse.Monthly, CreatedAt: now, UpdatedAt: &now,
	}
}

// BenchmarkWriteKeyJSON is the encoding of a GET /keys/{hash} answer.
func BenchmarkWriteKeyJSON(b *testing.B) {
	k := benchKey()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		if err := writeJSON(w, http.StatusOK, dataOf(func(b []byte) []byte { return appendKey(b, k, now) })); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteKeyJSONReflect is the same answer through its wire struct
// and encoding/json, as answers to key writes are encoded.
func BenchmarkWriteKeyJSONReflect(b *testing.B) {
	s := &Server{now: time.Now}
	k := benchKey()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := writeJSON(w, http.StatusOK, dataJSON[keyJSON]{s.keyJSON(k)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteGuardrailJSON is the encoding of a GET /guardrails/{id} answer.
func BenchmarkWriteGuardrailJSON(b *testing.B) {
	g := benchGuardrail()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := writeJSON(w, http.StatusOK, dataOf(func(b []byte) []byte { return appendGuardrail(b, g) })); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteGuardrailListJSON is the encoding of a page of 100
// guardrails (GET /guardrails?limit=100).
func BenchmarkWriteGuardrailListJSON(b *testing.B) {
	page := make([]*gatehouse.Guardrail, 100)
	for i := range page {
		page[i] = benchGuardrail()
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := writeJSON(w, http.StatusOK, listOf(page, 1000, appendGuardrail)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteGuardrailListJSONReflect is the same page through its wire
// structs and encoding/json, as before the appenders.
func BenchmarkWriteGuardrailListJSONReflect(b *testing.B) {
	page := make([]*gatehouse.Guardrail, 100)
	for i := range page {
		page[i] = benchGuardrail()
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := writeJSON(w, http.StatusOK, listJSON[guardrailJSON]{Data: mapSlice(page, toGuardrailJSON), TotalCount: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}
