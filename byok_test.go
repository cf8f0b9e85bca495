package gatehouse_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

func TestChooseBYOKKeys(t *testing.T) {
	const org, ws, provider, model = "org-a", "ws-a", "openai", "openai/gpt-4o"
	user := "user_ada"
	key := &gatehouse.Key{Hash: strings.Repeat("a", 64), OrganizationID: org, WorkspaceID: ws, CreatorUserID: &user}
	t0 := time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	byok := func(id string, change func(k *gatehouse.BYOKKey)) *gatehouse.BYOKKey {
		k := &gatehouse.BYOKKey{ID: id, OrganizationID: org, WorkspaceID: ws, Provider: provider, Key: gatehouse.Secret("sk-" + id), CreatedAt: t0}
		if change != nil {
			change(k)
		}
		return k
	}
	ids := func(keys []*gatehouse.BYOKKey) []string {
		out := []string{}
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		keys []*gatehouse.BYOKKey
		want []string
		rule string // the refusal's rule, "" when not refused
	}{
		{"none", nil, []string{}, ""},
		{"one", []*gatehouse.BYOKKey{byok("a", nil)}, []string{"a"}, ""},
		{"disabled", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.Disabled = true })}, []string{}, ""},
		{"another organization's", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.OrganizationID = "org-b" })}, []string{}, ""},
		{"another workspace's", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.WorkspaceID = "ws-b" })}, []string{}, ""},
		{"another provider's", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.Provider = "anthropic" })}, []string{}, ""},
		{"allowlists that let it through", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) {
			k.AllowedAPIKeyHashes, k.AllowedModels, k.AllowedUserIDs = []string{key.Hash}, []string{model}, []string{user}
		})}, []string{"a"}, ""},
		{"another key's", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.AllowedAPIKeyHashes = []string{strings.Repeat("b", 64)} })}, []string{}, ""},
		{"another model's", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.AllowedModels = []string{"openai/o1"} })}, []string{}, ""},
		{"another user's", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.AllowedUserIDs = []string{"user_eve"} })}, []string{}, ""},
		{"order: fallbacks last, then sort order, then age", []*gatehouse.BYOKKey{
			byok("fallback", func(k *gatehouse.BYOKKey) { k.IsFallback = true }),
			byok("second", func(k *gatehouse.BYOKKey) { k.SortOrder = 2 }),
			byok("first-newer", func(k *gatehouse.BYOKKey) { k.SortOrder = 1; k.CreatedAt = t0.Add(time.Second) }),
			byok("first-older", func(k *gatehouse.BYOKKey) { k.SortOrder = 1 }),
			byok("early-fallback", func(k *gatehouse.BYOKKey) { k.IsFallback = true; k.SortOrder = -1 }),
		}, []string{"first-older", "first-newer", "second", "early-fallback", "fallback"}, ""},
		{"byok only, none applies", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) {
			k.IsBYOKOnly, k.AllowedModels = true, []string{"openai/o1"}
		})}, nil, "is_byok_only"},
		{"byok only, disabled", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) {
			k.IsBYOKOnly, k.Disabled = true, true
		})}, []string{}, ""},
		{"byok only of another workspace", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) {
			k.IsBYOKOnly, k.WorkspaceID = true, "ws-b"
		})}, []string{}, ""},
		{"required for the model, for another key", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) {
			k.IsRequired, k.AllowedAPIKeyHashes = true, []string{strings.Repeat("b", 64)}
		})}, nil, "is_required"},
		{"required for other models", []*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) {
			k.IsRequired, k.AllowedModels = true, []string{"openai/o1"}
		})}, []string{}, ""},
		{"byok only, another applies", []*gatehouse.BYOKKey{
			byok("only", func(k *gatehouse.BYOKKey) { k.IsBYOKOnly, k.AllowedUserIDs = true, []string{"user_eve"} }),
			byok("mine", nil),
		}, []string{"mine"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gatehouse.ChooseBYOKKeys(tc.keys, key, provider, model)
			if tc.rule != "" {
				var e *gatehouse.Error
				if !errors.As(err, &e) || e.Code != gatehouse.EFORBIDDEN || e.Metadata["rule"] != tc.rule || e.Metadata["byok_key_id"] != "a" {
					t.Fatalf("err = %v, want EFORBIDDEN for rule %s of key a", err, tc.rule)
				}
				if strings.Contains(e.Message, "sk-a") || got != nil {
					t.Fatalf("refusal %q, keys %v", e.Message, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
	// A key without a user passes no user allowlist.
	keyless := *key
	keyless.CreatorUserID = nil
	got, err := gatehouse.ChooseBYOKKeys([]*gatehouse.BYOKKey{byok("a", func(k *gatehouse.BYOKKey) { k.AllowedUserIDs = []string{user} })},
		&keyless, provider, model)
	if err != nil || len(got) != 0 {
		t.Fatalf("a key without a user: %v, %v", ids(got), err)
	}
}

// TestSecretNeverShows: a provider key held as a Secret prints, logs and
// encodes as [redacted], alone or inside a struct.
func TestSecretNeverShows(t *testing.T) {
	const plain = "sk-proj-NEVERSHOWN-0123456789"
	k := &gatehouse.BYOKKey{ID: "a", Key: gatehouse.Secret(plain)}
	var out bytes.Buffer
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&out, f+"\n", k.Key)
		fmt.Fprintf(&out, f+"\n", *k)
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	out.Write(b)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "key", k.Key, "byok", k)
	slog.New(slog.NewTextHandler(&out, nil)).Info("x", "key", k.Key)
	if strings.Contains(out.String(), plain) || strings.Contains(out.String(), fmt.Sprintf("%x", plain)) {
		t.Fatalf("the secret shows:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "[redacted]") {
		t.Fatalf("no [redacted] in:\n%s", out.String())
	}
	if string(k.Key) != plain {
		t.Fatal("string(secret) must be the secret")
	}
}

func TestNewBYOKKey(t *testing.T) {
	k, err := gatehouse.NewBYOKKey(gatehouse.BYOKKeyCreate{Provider: "openai", BYOKKeyUpdate: gatehouse.BYOKKeyUpdate{
		Key: gatehouse.Val("short-key"), AllowedModels: gatehouse.Val([]string{"openai/a", "openai/b", "openai/a"})}})
	if err != nil {
		t.Fatal(err)
	}
	if k.Label != "********" || string(k.Key) != "short-key" || k.Disabled || k.SortOrder != 0 {
		t.Fatalf("new key: %+v", k)
	}
	if diff := cmp.Diff([]string{"openai/a", "openai/b"}, k.AllowedModels); diff != "" {
		t.Errorf("allowed_models without repeats (-want +got):\n%s", diff)
	}
}
