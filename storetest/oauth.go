package storetest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// pkce returns a fresh verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	verifier = rand.Text() + rand.Text() // 52 characters, 260 random bits
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// newCode creates an authorization code in the fixture's organization.
func (f *fixture) newCode(t *testing.T, creator *string, c gatehouse.AuthCodeCreate) *gatehouse.AuthCode {
	t.Helper()
	if c.CallbackURL == "" {
		c.CallbackURL = "https://app.example.com/callback"
	}
	code, err := f.store.CreateAuthCode(f.ctx, f.org.ID, creator, c)
	if err != nil {
		t.Fatalf("CreateAuthCode: %v", err)
	}
	return code
}

// exchange exchanges a code, with an optional verifier and method.
func (f *fixture) exchange(code string, verifier *string, method *string) (string, *string, error) {
	return f.store.ExchangeAuthCode(f.ctx, gatehouse.AuthCodeExchange{Code: code, CodeVerifier: verifier, CodeChallengeMethod: method})
}

// testOAuth checks OAuthService: codes, their exchange and its rules.
func testOAuth(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateDefaults", testOAuthCreateDefaults},
		{"AppID", testOAuthAppID},
		{"CreateInvalid", testOAuthCreateInvalid},
		{"CreateConflict", testOAuthCreateConflict},
		{"ExchangeS256", testOAuthExchangeS256},
		{"ExchangePlain", testOAuthExchangePlain},
		{"ExchangeWithoutChallenge", testOAuthExchangeWithoutChallenge},
		{"SingleUse", testOAuthSingleUse},
		{"Expired", testOAuthExpired},
		{"UnknownCode", testOAuthUnknownCode},
		{"WrongVerifier", testOAuthWrongVerifier},
		{"BurnedAfterFailedAttempts", testOAuthBurnedAfterFailedAttempts},
		{"MissingVerifier", testOAuthMissingVerifier},
		{"MethodMismatch", testOAuthMethodMismatch},
		{"MalformedInput", testOAuthMalformedInput},
		{"ConcurrentExchange", testOAuthConcurrentExchange},
		{"ConcurrentExchangeWithCreator", testOAuthConcurrentExchangeWithCreator},
		{"CreatorCaps", testOAuthCreatorCaps},
		{"CreatorWorkspace", testOAuthCreatorWorkspace},
		{"CreatorSpent", testOAuthCreatorSpent},
		{"CreatorGone", testOAuthCreatorGone},
		{"PendingCodeBlocksMemberRemoval", testOAuthPendingCodeBlocksMemberRemoval},
		{"MintedSpendCountsAgainstCreator", testOAuthMintedSpendCountsAgainstCreator},
		{"MintedChain", testOAuthMintedChain},
		{"MintedDiesWithCreator", testOAuthMintedDiesWithCreator},
		{"MintedSharesCreatorBudgets", testOAuthMintedSharesCreatorBudgets},
	})
}

func testOAuthCreateDefaults(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	_, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb", CodeChallenge: &challenge})
	now := f.clock.Now()
	if len(code.ID) < 22 { // 128 bits take 22 characters of base64
		t.Errorf("code id %q is too short to carry 128 random bits", code.ID)
	}
	if code.AppID <= 0 || code.OrganizationID != f.org.ID || code.WorkspaceID != def.ID || code.CreatorUserID != nil ||
		code.CallbackURL != "https://app.example.com/cb" || derefStr(code.CodeChallenge) != challenge ||
		derefStr(code.CodeChallengeMethod) != gatehouse.MethodS256 || code.Limit != nil || code.LimitReset != gatehouse.NoReset ||
		code.KeyExpiresAt != nil || code.KeyLabel != gatehouse.DefaultOAuthKeyLabel ||
		!code.CreatedAt.Equal(now) || !code.ExpiresAt.Equal(now.Add(gatehouse.AuthCodeTTL)) {
		t.Errorf("CreateAuthCode = %+v", code)
	}
	// Without a challenge there is no method.
	plain := f.newCode(t, nil, gatehouse.AuthCodeCreate{})
	if plain.CodeChallenge != nil || plain.CodeChallengeMethod != nil || plain.ID == code.ID {
		t.Errorf("CreateAuthCode without challenge = %+v", plain)
	}
}

func testOAuthAppID(t *testing.T, open Opener) {
	f := newFixture(t, open)
	app := func(orgID, callback string) int64 {
		t.Helper()
		code, err := f.store.CreateAuthCode(f.ctx, orgID, nil, gatehouse.AuthCodeCreate{CallbackURL: callback})
		ok(t, err)
		return code.AppID
	}
	a := app(f.org.ID, "https://app.example.com/callback")
	if b := app(f.org.ID, "https://app.example.com/other?x=1"); b != a {
		t.Errorf("same origin: app ids %d and %d", a, b)
	}
	if b := app(f.org.ID, "https://other.example.com/callback"); b == a {
		t.Errorf("another origin has the same app id %d", a)
	}
	if b := app(f.org.ID, "https://app.example.com:8443/callback"); b == a {
		t.Errorf("another port has the same app id %d", a)
	}
	l3000, l4000 := app(f.org.ID, "http://localhost:3000/cb"), app(f.org.ID, "http://localhost:4000/cb")
	if l3000 == l4000 || l3000 != app(f.org.ID, "http://localhost:3000") {
		t.Errorf("localhost app ids: 3000 → %d, 4000 → %d", l3000, l4000)
	}
	other := f.newOrg(t, "Other")
	if b := app(other.ID, "https://app.example.com/callback"); b == a {
		t.Errorf("another organization has the same app id %d", a)
	}
	if again := app(f.org.ID, "https://app.example.com/"); again != a {
		t.Errorf("app id changed from %d to %d", a, again)
	}
}

func testOAuthCreateInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, challenge := pkce()
	past := f.clock.Now().Add(-time.Second)
	for _, tc := range []struct {
		name string
		c    gatehouse.AuthCodeCreate
		code string
	}{
		{"no callback", gatehouse.AuthCodeCreate{}, gatehouse.EINVALID},
		{"http remote callback", gatehouse.AuthCodeCreate{CallbackURL: "http://example.com/cb"}, gatehouse.EINVALID},
		{"ftp callback", gatehouse.AuthCodeCreate{CallbackURL: "ftp://example.com/cb"}, gatehouse.EINVALID},
		{"relative callback", gatehouse.AuthCodeCreate{CallbackURL: "/cb"}, gatehouse.EINVALID},
		{"short challenge", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", CodeChallenge: strp("abc")}, gatehouse.EINVALID},
		{"unknown method", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", CodeChallenge: &challenge, CodeChallengeMethod: strp("S512")}, gatehouse.EINVALID},
		{"method without challenge", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", CodeChallengeMethod: strp("S256")}, gatehouse.EINVALID},
		{"negative limit", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", Limit: new(gatehouse.Money(-1))}, gatehouse.EINVALID},
		{"unknown limit type", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", UsageLimitType: "yearly"}, gatehouse.EINVALID},
		{"expired key", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", ExpiresAt: &past}, gatehouse.EINVALID},
		{"empty label", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", KeyLabel: strp("")}, gatehouse.EINVALID},
		{"long label", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", KeyLabel: strp(strings.Repeat("l", gatehouse.MaxKeyLabelLength+1))}, gatehouse.EINVALID},
		{"unknown workspace", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", WorkspaceID: "no-such-team"}, gatehouse.ENOTFOUND},
		{"unknown workspace id", gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", WorkspaceID: "6f1c1b7e-0000-4000-8000-000000000000"}, gatehouse.ENOTFOUND},
	} {
		_, err := f.store.CreateAuthCode(f.ctx, f.org.ID, nil, tc.c)
		if gatehouse.ErrorCode(err) != tc.code {
			t.Errorf("%s: error %v, want %s", tc.name, err, tc.code)
		}
	}
	// The challenge was not taken by a failed create.
	f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
}

func testOAuthCreateConflict(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	_, err := f.store.CreateAuthCode(f.ctx, f.org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://other.example", CodeChallenge: &challenge})
	wantCode(t, err, gatehouse.ECONFLICT)
	// Once the code is used the challenge is free again.
	_, _, err = f.exchange(code.ID, &verifier, nil)
	ok(t, err)
	f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	// And once a pending code has expired.
	_, challenge2 := pkce()
	f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge2})
	f.clock.Add(gatehouse.AuthCodeTTL)
	f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge2})
}

func testOAuthExchangeS256(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	w := f.newWorkspace(t, f.org.ID, "apps")
	verifier, challenge := pkce()
	keyExpires := f.clock.Now().Add(90 * 24 * time.Hour)
	code := f.newCode(t, &m.ID, gatehouse.AuthCodeCreate{
		CodeChallenge: &challenge, Limit: new(gatehouse.USD(5)), UsageLimitType: gatehouse.Monthly,
		ExpiresAt: &keyExpires, KeyLabel: strp("My app"), WorkspaceID: w.Slug,
	})
	if code.WorkspaceID != w.ID || code.KeyLabel != "My app" {
		t.Errorf("CreateAuthCode = %+v", code)
	}
	f.clock.Add(gatehouse.AuthCodeTTL - time.Millisecond) // the last moment it works
	for _, method := range []*string{nil, strp(gatehouse.MethodS256)} {
		if method != nil { // a second code for the explicit method
			verifier, challenge = pkce()
			code = f.newCode(t, &m.ID, gatehouse.AuthCodeCreate{
				CodeChallenge: &challenge, Limit: new(gatehouse.USD(5)), UsageLimitType: gatehouse.Monthly,
				ExpiresAt: &keyExpires, KeyLabel: strp("My app"), WorkspaceID: w.ID,
			})
		}
		plaintext, userID, err := f.exchange(code.ID, &verifier, method)
		ok(t, err)
		checkPlaintext(t, plaintext, gatehouse.KeyPrefix, gatehouse.HashKey(plaintext))
		if derefStr(userID) != m.ID {
			t.Errorf("user id = %s, want %s", optStr(userID), m.ID)
		}
		k, err := f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
		ok(t, err)
		want := &gatehouse.Key{
			Hash: k.Hash, OrganizationID: f.org.ID, WorkspaceID: w.ID, Name: "My app",
			Limit: new(gatehouse.USD(5)), LimitReset: gatehouse.Monthly, CreatorUserID: &m.ID,
			CreatedAt: f.clock.Now(), ExpiresAt: &keyExpires,
		}
		sameKey(t, "exchanged key", k, want, f.clock.Now())
		found, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
		sameKey(t, "FindKey", found, want, f.clock.Now())
	}
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{WorkspaceID: w.ID})
	ok(t, err)
	if len(keys) != 2 {
		t.Errorf("%d keys in the workspace, want 2", len(keys))
	}
}

func testOAuthExchangePlain(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, _ := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &verifier, CodeChallengeMethod: strp(gatehouse.MethodPlain)})
	if derefStr(code.CodeChallengeMethod) != gatehouse.MethodPlain {
		t.Errorf("method = %s", optStr(code.CodeChallengeMethod))
	}
	// S256 of a plain challenge is a mismatch: 400, not consumed.
	_, _, err := f.exchange(code.ID, &verifier, strp(gatehouse.MethodS256))
	wantCode(t, err, gatehouse.EINVALID)
	plaintext, userID, err := f.exchange(code.ID, &verifier, strp(gatehouse.MethodPlain))
	ok(t, err)
	if userID != nil {
		t.Errorf("user id = %s, want nil", *userID)
	}
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	k, err := f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
	ok(t, err)
	want := &gatehouse.Key{Hash: k.Hash, OrganizationID: f.org.ID, WorkspaceID: def.ID, Name: gatehouse.DefaultOAuthKeyLabel, CreatedAt: f.clock.Now()}
	sameKey(t, "exchanged key", k, want, f.clock.Now())
}

func testOAuthExchangeWithoutChallenge(t *testing.T, open Opener) {
	f := newFixture(t, open)
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CallbackURL: "http://localhost:3000/cb", Limit: new(gatehouse.USD(1))})
	plaintext, _, err := f.exchange(code.ID, nil, nil)
	ok(t, err)
	k, err := f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
	ok(t, err)
	if k.Limit == nil || *k.Limit != gatehouse.USD(1) || k.LimitReset != gatehouse.NoReset {
		t.Errorf("exchanged key = %s", keyString(k, f.clock.Now()))
	}
}

func testOAuthSingleUse(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	_, _, err := f.exchange(code.ID, &verifier, nil)
	ok(t, err)
	_, _, err = f.exchange(code.ID, &verifier, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if len(keys) != 1 {
		t.Errorf("%d keys, want 1", len(keys))
	}
}

func testOAuthExpired(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	nochallenge := f.newCode(t, nil, gatehouse.AuthCodeCreate{})
	f.clock.Add(gatehouse.AuthCodeTTL)
	_, _, err := f.exchange(code.ID, &verifier, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	f.clock.Add(time.Hour)
	_, _, err = f.exchange(code.ID, &verifier, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	_, _, err = f.exchange(nochallenge.ID, nil, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
}

func testOAuthUnknownCode(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, _ := pkce()
	for _, c := range []string{"ghc_unknown", gatehouse.NewAuthCodeID(), "x"} {
		_, _, err := f.exchange(c, &verifier, nil)
		wantCode(t, err, gatehouse.EFORBIDDEN)
		_, _, err = f.exchange(c, nil, nil)
		wantCode(t, err, gatehouse.EFORBIDDEN)
	}
}

func testOAuthWrongVerifier(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	wrong, _ := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	for range gatehouse.MaxVerifierAttempts - 1 {
		_, _, err := f.exchange(code.ID, &wrong, nil)
		wantCode(t, err, gatehouse.EFORBIDDEN)
	}
	// A failed attempt does not consume the code.
	_, _, err := f.exchange(code.ID, &verifier, nil)
	ok(t, err)
}

func testOAuthBurnedAfterFailedAttempts(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	wrong, _ := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	for range gatehouse.MaxVerifierAttempts {
		_, _, err := f.exchange(code.ID, &wrong, nil)
		wantCode(t, err, gatehouse.EFORBIDDEN)
	}
	_, _, err := f.exchange(code.ID, &verifier, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if len(keys) != 0 {
		t.Errorf("a burned code made %d keys", len(keys))
	}
	// A missing verifier counts as a failed attempt too.
	verifier2, challenge2 := pkce()
	code2 := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge2})
	for range gatehouse.MaxVerifierAttempts {
		_, _, err := f.exchange(code2.ID, nil, nil)
		wantCode(t, err, gatehouse.EFORBIDDEN)
	}
	_, _, err = f.exchange(code2.ID, &verifier2, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
}

func testOAuthMissingVerifier(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	_, _, err := f.exchange(code.ID, nil, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	_, _, err = f.exchange(code.ID, nil, strp(gatehouse.MethodS256))
	wantCode(t, err, gatehouse.EFORBIDDEN)
	_, _, err = f.exchange(code.ID, &verifier, nil)
	ok(t, err)
}

func testOAuthMethodMismatch(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	for range gatehouse.MaxVerifierAttempts + 1 { // not counted as verifier failures
		_, _, err := f.exchange(code.ID, &verifier, strp(gatehouse.MethodPlain))
		wantCode(t, err, gatehouse.EINVALID)
		_, _, err = f.exchange(code.ID, &challenge, strp(gatehouse.MethodPlain))
		wantCode(t, err, gatehouse.EINVALID)
	}
	_, _, err := f.exchange(code.ID, &verifier, strp(gatehouse.MethodS256))
	ok(t, err)
}

func testOAuthMalformedInput(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	for _, x := range []gatehouse.AuthCodeExchange{
		{Code: ""},
		{Code: "", CodeVerifier: &verifier},
		{Code: code.ID, CodeVerifier: strp("short")},
		{Code: code.ID, CodeVerifier: strp(verifier[:42])},
		{Code: code.ID, CodeVerifier: strp(verifier[:42] + "!")},
		{Code: code.ID, CodeVerifier: strp(strings.Repeat("a", 129))},
		{Code: code.ID, CodeVerifier: strp("")},
		{Code: code.ID, CodeVerifier: &verifier, CodeChallengeMethod: strp("S512")},
		{Code: code.ID, CodeVerifier: &verifier, CodeChallengeMethod: strp("s256")},
	} {
		_, _, err := f.store.ExchangeAuthCode(f.ctx, x)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("ExchangeAuthCode(%+v) = %v, want %s", x, err, gatehouse.EINVALID)
		}
	}
	// None of that consumed or burned the code.
	_, _, err := f.exchange(code.ID, &verifier, nil)
	ok(t, err)
}

func testOAuthConcurrentExchange(t *testing.T, open Opener) {
	f := newFixture(t, open)
	verifier, challenge := pkce()
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	f.raceExchange(t, code, verifier)
}

// testOAuthConcurrentExchangeWithCreator races the exchanges of a regular
// key's code: still exactly one key, with one inherited assignment.
func testOAuthConcurrentExchangeWithCreator(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, creator, g := f.limitedCreator(t)
	verifier, challenge := pkce()
	code := f.creatorCode(t, creator, gatehouse.AuthCodeCreate{CodeChallenge: &challenge})
	won := f.raceExchange(t, code, verifier, creator.Hash)
	if got := f.keyAssignments(t, g.ID); !sameIDs(got, sortedIDs(creator.Hash, won)) {
		t.Errorf("assignments %v, want the creator's and the winner's", got)
	}
}

// raceExchange runs ten concurrent exchanges of code: exactly one wins, the
// others are EFORBIDDEN, and the organization's keys are others and the
// winner's. It returns the winner's hash.
func (f *fixture) raceExchange(t *testing.T, code *gatehouse.AuthCode, verifier string, others ...string) string {
	t.Helper()
	const n = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wins []string
	var failures []error
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			plaintext, _, err := f.exchange(code.ID, &verifier, nil)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins = append(wins, plaintext)
			} else {
				failures = append(failures, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("%d exchanges succeeded, want exactly 1", len(wins))
	}
	for _, err := range failures {
		wantCode(t, err, gatehouse.EFORBIDDEN)
	}
	won := gatehouse.HashKey(wins[0])
	f.wantKeys(t, append(others, won)...)
	return won
}

// limitedCreator returns a member and their key in workspace "apps": $1 a
// day, expiring in two days, under a guardrail with an allow-list.
func (f *fixture) limitedCreator(t *testing.T) (*gatehouse.Member, *gatehouse.Key, *gatehouse.Guardrail) {
	t.Helper()
	m := f.newMember(t, f.org.ID, "ada@example.com")
	w := f.newWorkspace(t, f.org.ID, "apps")
	expires := f.clock.Now().Add(48 * time.Hour)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "creator", WorkspaceID: w.ID, CreatorUserID: &m.ID,
		Limit: new(cents(100)), LimitReset: gatehouse.Daily, ExpiresAt: &expires})
	g := f.newGuardrail(t, f.org.ID, gatehouse.GuardrailCreate{WorkspaceID: w.ID, GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("only mini"), AllowedModels: gatehouse.Val([]string{"openai/gpt-4o-mini"})}})
	f.assignKey(t, g, k)
	return m, k, g
}

// creatorCode creates a code as the regular key k.
func (f *fixture) creatorCode(t *testing.T, k *gatehouse.Key, c gatehouse.AuthCodeCreate) *gatehouse.AuthCode {
	t.Helper()
	c.CreatorKeyHash = k.Hash
	return f.newCode(t, k.CreatorUserID, c)
}

// exchangedKey exchanges a code without a challenge and reads its key.
func (f *fixture) exchangedKey(t *testing.T, code *gatehouse.AuthCode) *gatehouse.Key {
	t.Helper()
	plaintext, _, err := f.exchange(code.ID, nil, nil)
	ok(t, err)
	k, err := f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
	ok(t, err)
	return k
}

// testOAuthCreatorCaps: the key a regular key's code yields gets at most
// what the creator has left now (spend of its period and live reservations
// count), never resets, expires no later and inherits its guardrail.
func testOAuthCreatorCaps(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, creator, g := f.limitedCreator(t)
	f.spend(t, creator, cents(40), false)
	f.mustReserve(t, creator, cents(10), false, f.budgets(t, creator))
	far := f.clock.Now().Add(90 * 24 * time.Hour)
	for _, c := range []struct {
		name  string
		limit *gatehouse.Money
		want  gatehouse.Money
	}{
		{"no limit asked", nil, cents(50)},
		{"more than is left", new(gatehouse.USD(5)), cents(50)},
		{"less than is left", new(cents(20)), cents(20)},
	} {
		code := f.creatorCode(t, creator, gatehouse.AuthCodeCreate{Limit: c.limit, UsageLimitType: gatehouse.Monthly,
			ExpiresAt: &far, WorkspaceID: "apps"})
		k := f.exchangedKey(t, code)
		if k.Limit == nil || *k.Limit != c.want || k.LimitReset != gatehouse.NoReset {
			t.Errorf("%s: limit %s reset %q, want %s never reset", c.name, optMoney(k.Limit), k.LimitReset, c.want)
		}
		if k.ExpiresAt == nil || !k.ExpiresAt.Equal(*creator.ExpiresAt) {
			t.Errorf("%s: expires_at %v, want the creator's %v", c.name, k.ExpiresAt, *creator.ExpiresAt)
		}
		if k.WorkspaceID != creator.WorkspaceID || derefStr(k.CreatorUserID) != derefStr(creator.CreatorUserID) {
			t.Errorf("%s: key %+v, want the creator's workspace and user", c.name, k)
		}
		if !slices.Contains(f.keyAssignments(t, g.ID), k.Hash) {
			t.Errorf("%s: the new key does not inherit the creator's guardrail", c.name)
		}
	}
	// A code asking for an earlier expiry keeps it.
	soon := f.clock.Now().Add(time.Hour)
	k := f.exchangedKey(t, f.creatorCode(t, creator, gatehouse.AuthCodeCreate{ExpiresAt: &soon}))
	if k.ExpiresAt == nil || !k.ExpiresAt.Equal(soon) {
		t.Errorf("expires_at %v, want %v", k.ExpiresAt, soon)
	}
}

// testOAuthCreatorWorkspace: a regular key's code lands in its workspace;
// naming another is EFORBIDDEN.
func testOAuthCreatorWorkspace(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, creator, _ := f.limitedCreator(t)
	f.newWorkspace(t, f.org.ID, "elsewhere")
	_, err := f.store.CreateAuthCode(f.ctx, f.org.ID, creator.CreatorUserID, gatehouse.AuthCodeCreate{
		CallbackURL: "https://app.example.com/cb", WorkspaceID: "elsewhere", CreatorKeyHash: creator.Hash})
	wantCode(t, err, gatehouse.EFORBIDDEN)
	if code := f.creatorCode(t, creator, gatehouse.AuthCodeCreate{}); code.WorkspaceID != creator.WorkspaceID {
		t.Errorf("code workspace %s, want the creator's %s", code.WorkspaceID, creator.WorkspaceID)
	}
}

// testOAuthCreatorSpent: a creator with nothing left cannot create a code
// (EPAYMENT), and one spent after creating it cannot have it exchanged.
func testOAuthCreatorSpent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, creator, _ := f.limitedCreator(t)
	code := f.creatorCode(t, creator, gatehouse.AuthCodeCreate{})
	f.spend(t, creator, cents(100), false)
	_, err := f.store.CreateAuthCode(f.ctx, f.org.ID, creator.CreatorUserID, gatehouse.AuthCodeCreate{
		CallbackURL: "https://app.example.com/cb", CreatorKeyHash: creator.Hash})
	wantCode(t, err, gatehouse.EPAYMENT)
	_, _, err = f.exchange(code.ID, nil, nil)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	f.wantKeys(t, creator.Hash)
}

// testOAuthCreatorGone: a code dies with its creator key: disabled, expired
// or deleted before the exchange, it yields no key (EFORBIDDEN), and stays
// dead.
func testOAuthCreatorGone(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		kill func(f *fixture, k *gatehouse.Key) error
	}{
		{"disabled", (*fixture).disableKey},
		{"deleted", (*fixture).deleteKey},
		{"expired", func(f *fixture, k *gatehouse.Key) error { f.clock.Set(*k.ExpiresAt); return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, open)
			_, creator, _ := f.limitedCreator(t)
			f.clock.Set(creator.ExpiresAt.Add(-time.Minute)) // the code outlives the creator
			code := f.creatorCode(t, creator, gatehouse.AuthCodeCreate{})
			ok(t, c.kill(f, creator))
			_, _, err := f.exchange(code.ID, nil, nil)
			wantCode(t, err, gatehouse.EFORBIDDEN)
			keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
			ok(t, err)
			if len(keys) > 1 || len(keys) == 1 && keys[0].Hash != creator.Hash {
				t.Errorf("keys after the refused exchange: %v", keyHashes(keys))
			}
			if c.name == "disabled" { // re-enabling does not revive the code
				_, err := f.store.UpdateKey(f.ctx, f.org.ID, creator.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(false)})
				ok(t, err)
				_, _, err = f.exchange(code.ID, nil, nil)
				wantCode(t, err, gatehouse.EFORBIDDEN)
			}
		})
	}
}

// wantKeys checks the organization's keys (disabled ones too) are exactly hashes.
func (f *fixture) wantKeys(t *testing.T, hashes ...string) {
	t.Helper()
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if got := sortedIDs(keyHashes(keys)...); !sameIDs(got, sortedIDs(hashes...)) {
		t.Errorf("keys = %v, want %v", got, hashes)
	}
}

// testOAuthPendingCodeBlocksMemberRemoval: a member's pending code counts
// like an active key against removing them from its workspace or from the
// organization; a used or expired code, or one whose creator key is
// disabled, does not.
func testOAuthPendingCodeBlocksMemberRemoval(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	w := f.newWorkspace(t, f.org.ID, "apps")
	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID})
	ok(t, err)
	f.newCode(t, &m.ID, gatehouse.AuthCodeCreate{WorkspaceID: w.ID}) // a code without a creator key
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID})
	wantCode(t, err, gatehouse.EINVALID)
	if ids := metaIDs(t, err, "user_ids"); !sameIDs(ids, []string{m.ID}) {
		t.Errorf("metadata user_ids = %v", ids)
	}
	wantCode(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID), gatehouse.EINVALID)

	// Once the code expires, nothing blocks.
	f.clock.Add(gatehouse.AuthCodeTTL)
	n, err := f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID})
	ok(t, err)
	if n != 1 {
		t.Errorf("removed_count = %d, want 1", n)
	}
	// A used code does not block either (its key does, while active).
	used := f.newCode(t, &m.ID, gatehouse.AuthCodeCreate{})
	wantCode(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID), gatehouse.EINVALID)
	plaintext, _, err := f.exchange(used.ID, nil, nil)
	ok(t, err)
	key := gatehouse.HashKey(plaintext)
	// Nor does the code of a disabled key: it died with its creator.
	f.creatorCode(t, f.readKey(t, key), gatehouse.AuthCodeCreate{})
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, key, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	ok(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID))
}

// optMoney shows an optional amount.
func optMoney(m *gatehouse.Money) string {
	if m == nil {
		return "none"
	}
	return m.String()
}

// disableKey and deleteKey end a key's life, as its owner would.
func (f *fixture) disableKey(k *gatehouse.Key) error {
	_, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	return err
}

func (f *fixture) deleteKey(k *gatehouse.Key) error {
	return f.store.DeleteKey(f.ctx, f.org.ID, k.Hash)
}
