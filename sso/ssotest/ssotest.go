// Package ssotest runs a real OpenID provider for the tests: zitadel's
// OpenID Provider (github.com/zitadel/oidc/v3/pkg/op) with its example
// storage and login page, adapted here so that a test can give users
// groups, rotate the signing key, and make the provider misbehave (sign
// with a key it does not publish, issue tokens for another audience or with
// another nonce, or already expired) to see that each is refused.
package ssotest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is a person the provider knows.
type User struct {
	ID, Username, Password string
	Email                  string
	EmailVerified          bool
	FirstName, LastName    string
	Groups                 []string
}

// Provider is an OpenID provider serving on the loopback.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:port).
	Issuer string
	// ClientID and ClientSecret are the credentials of its one client.
	ClientID, ClientSecret string
	server                 *httptest.Server
	store                  *adapted
}

// Start starts a provider with one confidential client allowed to come
// back to redirectURIs, and the users given; the test's cleanup stops it.
func Start(t testing.TB, redirectURIs []string, users ...User) *Provider {
	t.Helper()
	p := &Provider{ClientID: "gatehouse-" + uuid.NewString()[:8], ClientSecret: "secret-" + uuid.NewString()}
	p.server = httptest.NewUnstartedServer(nil)
	p.Issuer = "http://" + p.server.Listener.Addr().String()
	us := &userStore{users: map[string]*User{}}
	for i := range users {
		us.users[users[i].ID] = &users[i]
	}
	client := storage.WebClient(p.ClientID, p.ClientSecret, redirectURIs...)
	p.store = &adapted{Storage: storage.NewStorageWithClients(us, map[string]*storage.Client{p.ClientID: client}), users: us}
	p.store.keys = []*signingKey{newSigningKey()}
	p.server.Config.Handler = p.reissue(exampleop.SetupServer(p.Issuer, p.store, nil, false))
	p.server.Start()
	t.Cleanup(p.server.Close)
	return p
}

// SetGroups replaces the groups of a user.
func (p *Provider) SetGroups(userID string, groups ...string) {
	p.store.users.mu.Lock()
	defer p.store.users.mu.Unlock()
	p.store.users.users[userID].Groups = groups
}

// RotateKey signs from now on with a new key, and publishes only it.
func (p *Provider) RotateKey() {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys = []*signingKey{newSigningKey()}
}

// KeyID returns the id of the key the provider signs with.
func (p *Provider) KeyID() string {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.keys[0].id
}

// Misbehave makes the provider issue tokens that a relying party must
// refuse; the zero value behaves.
type Misbehave struct {
	// ForgeSignature signs with a private key that is not the published
	// one, under the published key's id.
	ForgeSignature bool
	// Audience replaces the ID token's audience (and, with one entry, its
	// azp), signed again with the provider's key: a token the provider
	// issued for another client.
	Audience []string
	// Nonce replaces the nonce the request asked for.
	Nonce string
	// Lifetime is how long the ID token lives (0: an hour; negative: it is
	// expired when issued).
	Lifetime time.Duration
}

// Misbehave sets how the provider misbehaves from now on.
func (p *Provider) Misbehave(m Misbehave) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.bad = m
}

// userStore is the example storage's UserStore over Users, with groups.
type userStore struct {
	mu    sync.Mutex
	users map[string]*User
}

func (s *userStore) user(u *User) *storage.User {
	return &storage.User{ID: u.ID, Username: u.Username, Password: u.Password, FirstName: u.FirstName, LastName: u.LastName,
		Email: u.Email, EmailVerified: u.EmailVerified, PreferredLanguage: language.English}
}

func (s *userStore) GetUserByID(id string) *storage.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.users[id]; ok {
		return s.user(u)
	}
	return nil
}

func (s *userStore) GetUserByUsername(name string) *storage.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Username == name {
			return s.user(u)
		}
	}
	return nil
}

func (s *userStore) ExampleClientID() string { return storage.ServiceUserID }

func (s *userStore) groups(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.users[id]; ok {
		return slices.Clone(u.Groups)
	}
	return nil
}

// adapted is the example storage with keys that rotate, groups in the ID
// token for the "groups" scope, and the misbehaviours.
type adapted struct {
	*storage.Storage
	users *userStore

	mu   sync.Mutex
	keys []*signingKey // the first signs
	bad  Misbehave
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func newSigningKey() *signingKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return &signingKey{id: uuid.NewString(), key: key}
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct{ *signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

// SigningKey signs with the current key, or forges under its id.
func (s *adapted) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad.ForgeSignature {
		return &signingKey{id: s.keys[0].id, key: newSigningKey().key}, nil
	}
	return s.keys[0], nil
}

// SignatureAlgorithms is RS256.
func (s *adapted) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet publishes the current keys.
func (s *adapted) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

// GetClientByClientID allows the groups scope and the token lifetime set.
func (s *adapted) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return &client{Client: c, s: s}, nil
}

type client struct {
	op.Client
	s *adapted
}

func (c *client) IsScopeAllowed(scope string) bool {
	return scope == "groups" || c.Client.IsScopeAllowed(scope)
}

func (c *client) IDTokenLifetime() time.Duration {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.bad.Lifetime != 0 {
		return c.s.bad.Lifetime
	}
	return time.Hour
}

// AuthRequestByCode returns the request of a code with the audience and
// nonce the misbehaviour says.
func (s *adapted) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &request{AuthRequest: r, nonce: s.bad.Nonce}, nil
}

type request struct {
	op.AuthRequest
	nonce string
}

func (r *request) GetNonce() string {
	if r.nonce != "" {
		return r.nonce
	}
	return r.AuthRequest.GetNonce()
}

// SetUserinfoFromRequest puts the user's groups in the ID token when the
// groups scope was asked for.
func (s *adapted) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, token, scopes); err != nil {
		return err
	}
	if slices.Contains(scopes, "groups") {
		info.AppendClaims("groups", s.users.groups(token.GetSubject()))
	}
	return nil
}

// reissue wraps the provider's handler: while Misbehave.Audience is set,
// the ID token of each token response has that audience, signed again with
// the provider's own key (the provider cannot be told to issue a token to
// a client that did not ask for it: it always adds the client).
func (p *Provider) reissue(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.store.mu.Lock()
		aud, key := p.store.bad.Audience, p.store.keys[0]
		p.store.mu.Unlock()
		if aud == nil || r.URL.Path != "/oauth/token" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var resp map[string]any
		if err := json.Unmarshal(body, &resp); err == nil && resp["id_token"] != nil {
			if raw, err := resign(resp["id_token"].(string), key, aud); err == nil {
				resp["id_token"] = raw
				body, _ = json.Marshal(resp)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

// resign returns a compact JWT with the payload of raw, its audience (and
// azp) replaced, signed by key.
func resign(raw string, key *signingKey, aud []string) (string, error) {
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", err
	}
	var claims map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return "", err
	}
	claims["aud"] = aud
	delete(claims, "azp")
	if len(aud) == 1 {
		claims["azp"] = aud[0]
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.id))
	if err != nil {
		return "", err
	}
	signed, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return signed.CompactSerialize()
}
