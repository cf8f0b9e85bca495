// Package sso is the OpenID Connect relying party of the web console: it
// sends a browser to an organization's identity provider (the
// authorization code flow with PKCE, a state and a nonce), and when the
// browser comes back it exchanges the code, verifies the ID token against
// the provider's discovery document and keys (github.com/coreos/go-oidc,
// which follows a key rotation by fetching the keys again when a token names
// one it does not know), checks the nonce, reads the claims the provider is
// configured with, and hands what it verified to the store
// (gatehouse.SSOService.SignInWithSSO), which decides who that is.
package sso

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"gatehouse"
	"gatehouse/egress"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Store is what the relying party needs of the store.
type Store interface {
	FindSSOProviderForSignIn(ctx context.Context, id string) (*gatehouse.SSOProvider, error)
	CreateSSOLogin(ctx context.Context, state string, login gatehouse.SSOLogin) error
	TakeSSOLogin(ctx context.Context, state string) (*gatehouse.SSOLogin, error)
	SignInWithSSO(ctx context.Context, in gatehouse.SSOSignIn) (*gatehouse.Session, string, error)
}

// DiscoveryTTL is how long a provider's discovery document is kept before
// it is read again. Its keys are read again whenever a token names one
// that is not known (a rotation), whatever this says.
const DiscoveryTTL = time.Hour

// RelyingParty signs members in through their organization's providers.
type RelyingParty struct {
	store  Store
	client *http.Client
	now    gatehouse.Clock

	mu         sync.Mutex
	discovered map[string]discovered // by issuer
}

type discovered struct {
	provider *oidc.Provider
	at       time.Time
}

// NewClient returns the HTTP client of the relying party's requests to
// the providers (discovery, keys, the code's exchange) under the egress
// policy that observability deliveries follow: an organization's admin
// names the issuer, and its discovery document names the other addresses,
// so without it an admin could make the server reach its own loopback, a
// private network or a cloud metadata service (and read the start of their
// answers in the error of a provider that cannot be saved). An identity
// provider on such an address (a Keycloak on the company network) is
// opened with GATEHOUSE_EGRESS_ALLOW.
func NewClient(policy *egress.Policy) *http.Client {
	return &http.Client{Transport: policy.Transport(), Timeout: 10 * time.Second}
}

// New returns the relying party over store. client makes its requests to
// the providers (nil: NewClient's under the default egress policy, which
// refuses the loopback and private networks); now is the clock ID tokens'
// expiry is checked against (nil: time.Now).
func New(store Store, client *http.Client, now gatehouse.Clock) *RelyingParty {
	if client == nil {
		client = NewClient(&egress.Policy{})
	}
	if now == nil {
		now = time.Now
	}
	return &RelyingParty{store: store, client: client, now: now, discovered: map[string]discovered{}}
}

// CheckIssuer reads an issuer's discovery document, as a provider is
// saved: a typo in the issuer shows at once, not at the first sign-in.
// EINVALID naming issuer_url.
func (rp *RelyingParty) CheckIssuer(ctx context.Context, issuer string) error {
	_, err := rp.discover(ctx, issuer, true)
	return err
}

// discover returns the provider of an issuer, from its discovery document
// (kept DiscoveryTTL, unless fresh asks for a new read).
func (rp *RelyingParty) discover(ctx context.Context, issuer string, fresh bool) (*oidc.Provider, error) {
	now := time.Now()
	rp.mu.Lock()
	d, ok := rp.discovered[issuer]
	rp.mu.Unlock()
	if ok && !fresh && now.Sub(d.at) < DiscoveryTTL {
		return d.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, rp.client), issuer)
	if err != nil {
		return nil, gatehouse.WrapError(err, gatehouse.EINVALID,
			"issuer_url: the provider's discovery document (%s/.well-known/openid-configuration) could not be read or does not name this issuer: %s",
			issuer, err.Error()).WithMetadata("field", "issuer_url")
	}
	rp.mu.Lock()
	rp.discovered[issuer] = discovered{provider: p, at: now}
	rp.mu.Unlock()
	return p, nil
}

// Start begins a sign-in through a provider: it records the state, the
// nonce's hash and the PKCE verifier (gatehouse.SSOLogin), and returns the
// provider's authorization URL to send the browser to, and the state, which
// the browser must keep (a cookie) and bring back. redirectURL is the
// console's callback (gatehouse.SSORedirectURL); next, a path of the
// console to go to once signed in. ENOTFOUND for an unknown or disabled
// provider; EUNAVAILABLE when the provider cannot be reached.
func (rp *RelyingParty) Start(ctx context.Context, providerID, redirectURL, next string) (authURL, state string, err error) {
	p, err := rp.store.FindSSOProviderForSignIn(ctx, providerID)
	if err != nil {
		return "", "", err
	}
	op, err := rp.discover(ctx, p.IssuerURL, false)
	if err != nil {
		return "", "", unavailable(p, err)
	}
	state, nonce, verifier := gatehouse.NewSSOState(), gatehouse.NewSSOState(), oauth2.GenerateVerifier()
	if err := rp.store.CreateSSOLogin(ctx, state, gatehouse.SSOLogin{ProviderID: p.ID, NonceHash: gatehouse.HashNonce(nonce),
		Verifier: gatehouse.Secret(verifier), Next: next}); err != nil {
		return "", "", err
	}
	return config(p, op, redirectURL).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), state, nil
}

// unavailable is the error of a provider that cannot be reached.
func unavailable(p *gatehouse.SSOProvider, err error) error {
	return gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "%s cannot be reached right now (its discovery document did not answer): try again later, or sign in another way", p.Name)
}

// config is the OAuth 2.0 client of a provider.
func config(p *gatehouse.SSOProvider, op *oidc.Provider, redirectURL string) *oauth2.Config {
	endpoint := op.Endpoint()
	if p.ClientSecret == "" {
		endpoint.AuthStyle = oauth2.AuthStyleInParams // a public client sends its id alone
	}
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: string(p.ClientSecret), Endpoint: endpoint,
		RedirectURL: redirectURL, Scopes: p.Scopes}
}

// Finish completes a sign-in when the browser comes back with state and a
// code: it takes the sign-in of the state (once: a state replayed is
// refused), exchanges the code with the PKCE verifier, verifies the ID
// token (signature by the provider's keys, issuer, audience, expiry, the
// nonce) and opens the session. It returns the session, its token and
// where the browser goes next. EUNAUTHORIZED for a state that is unknown,
// used or expired and for a token that fails a check (the message says
// which); EFORBIDDEN for a person the store does not let in.
func (rp *RelyingParty) Finish(ctx context.Context, state, code, redirectURL string) (*gatehouse.Session, string, string, error) {
	login, err := rp.store.TakeSSOLogin(ctx, state)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, "", "", gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "%s", gatehouse.ErrorMessage(err))
	}
	if err != nil {
		return nil, "", "", err
	}
	p, err := rp.store.FindSSOProviderForSignIn(ctx, login.ProviderID)
	if err != nil {
		return nil, "", "", err
	}
	op, err := rp.discover(ctx, p.IssuerURL, false)
	if err != nil {
		return nil, "", "", unavailable(p, err)
	}
	ctx = oidc.ClientContext(ctx, rp.client)
	tok, err := config(p, op, redirectURL).Exchange(ctx, code, oauth2.VerifierOption(string(login.Verifier)))
	if err != nil {
		return nil, "", "", refused(p, "the code could not be exchanged for tokens", err)
	}
	in, err := rp.verify(ctx, p, op, tok, login.NonceHash)
	if err != nil {
		return nil, "", "", err
	}
	s, token, err := rp.store.SignInWithSSO(ctx, in)
	if err != nil {
		return nil, "", "", err
	}
	return s, token, login.Next, nil
}

// refused is the error of a sign-in the provider's answer does not
// support: the client reads why, the log the cause.
func refused(p *gatehouse.SSOProvider, why string, err error) error {
	return gatehouse.WrapError(err, gatehouse.EUNAUTHORIZED, "the sign-in with %s was refused: %s", p.Name, why)
}

// verify checks the ID token of tok and reads what it says (with the
// userinfo endpoint's claims where it lacks the configured ones).
func (rp *RelyingParty) verify(ctx context.Context, p *gatehouse.SSOProvider, op *oidc.Provider, tok *oauth2.Token, nonceHash string) (gatehouse.SSOSignIn, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return gatehouse.SSOSignIn{}, refused(p, "the provider sent no ID token (is the openid scope allowed?)", errors.New("no id_token"))
	}
	idt, err := op.Verifier(&oidc.Config{ClientID: p.ClientID, Now: rp.now}).Verify(ctx, raw)
	if err != nil {
		return gatehouse.SSOSignIn{}, refused(p, tokenProblem(err), err)
	}
	if subtle.ConstantTimeCompare([]byte(gatehouse.HashNonce(idt.Nonce)), []byte(nonceHash)) != 1 {
		return gatehouse.SSOSignIn{}, refused(p, "the ID token's nonce is not the one this sign-in sent", errors.New("nonce mismatch"))
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return gatehouse.SSOSignIn{}, refused(p, "the ID token's claims cannot be read", err)
	}
	if azp, _ := claims["azp"].(string); len(idt.Audience) > 1 && azp != p.ClientID {
		return gatehouse.SSOSignIn{}, refused(p, "the ID token was issued to another client (azp)", fmt.Errorf("azp %q", azp))
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			return gatehouse.SSOSignIn{}, refused(p, "the access token does not match the ID token's at_hash", err)
		}
	}
	if err := rp.userInfo(ctx, p, op, tok, idt.Subject, claims); err != nil {
		return gatehouse.SSOSignIn{}, err
	}
	return readClaims(p, idt.Subject, claims)
}

// tokenProblem says in a few words why go-oidc refused an ID token.
func tokenProblem(err error) string {
	var expired *oidc.TokenExpiredError
	switch msg := err.Error(); {
	case errors.As(err, &expired):
		return "the ID token has expired"
	case strings.Contains(msg, "audience"):
		return "the ID token was issued for another client (its audience is not this client id)"
	case strings.Contains(msg, "issued by a different provider"):
		return "the ID token was issued by another issuer"
	case strings.Contains(msg, "signature"), strings.Contains(msg, "malformed"), strings.Contains(msg, "signing algorithm"):
		return "the ID token's signature does not verify with the provider's keys"
	default:
		return "the ID token did not verify"
	}
}

// userInfo adds to claims what the userinfo endpoint says and the ID token
// does not, when the ID token lacks a claim the provider is configured to
// read (some providers put the email or the groups only there).
func (rp *RelyingParty) userInfo(ctx context.Context, p *gatehouse.SSOProvider, op *oidc.Provider, tok *oauth2.Token, subject string, claims map[string]any) error {
	missing := false
	for _, name := range []string{p.EmailClaim, p.EmailVerifiedClaim, p.GroupsClaim} {
		if _, ok := claim(claims, name); name != "" && !ok {
			missing = true
		}
	}
	if !missing || op.UserInfoEndpoint() == "" {
		return nil
	}
	ui, err := op.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return refused(p, "its userinfo endpoint did not answer", err)
	}
	if ui.Subject != subject {
		return refused(p, "its userinfo is of another subject than the ID token", fmt.Errorf("userinfo sub %q", ui.Subject))
	}
	more := map[string]any{}
	if err := ui.Claims(&more); err != nil {
		return refused(p, "its userinfo cannot be read", err)
	}
	for k, v := range more {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return nil
}
