package gatehouse_test

import (
	"gatehouse/internal/errtest"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// The example of RFC 7636, Appendix B.
const (
	rfcVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

func TestVerifyPKCE(t *testing.T) {
	for _, tc := range []struct {
		method, challenge, verifier string
		want                        bool
	}{
		{gatehouse.MethodS256, rfcChallenge, rfcVerifier, true},
		{gatehouse.MethodS256, rfcChallenge, rfcVerifier + "x", false},
		{gatehouse.MethodS256, rfcChallenge, rfcChallenge, false},
		{gatehouse.MethodS256, rfcVerifier, rfcVerifier, false},
		{gatehouse.MethodS256, rfcChallenge, "", false},
		{gatehouse.MethodPlain, rfcVerifier, rfcVerifier, true},
		{gatehouse.MethodPlain, rfcChallenge, rfcVerifier, false},
		{gatehouse.MethodPlain, rfcVerifier, rfcVerifier[:42], false},
		{gatehouse.MethodPlain, rfcVerifier, strings.ToUpper(rfcVerifier), false},
	} {
		if got := gatehouse.VerifyPKCE(tc.method, tc.challenge, tc.verifier); got != tc.want {
			t.Errorf("VerifyPKCE(%s, %s, %s) = %v", tc.method, tc.challenge, tc.verifier, got)
		}
	}
}

func TestAuthCodeCreateValidate(t *testing.T) {
	now := utcAt(2028, 2, 23, 12, 0, 0, 0)
	future, past := now.Add(time.Hour), now.Add(-time.Hour)
	ok := func(c gatehouse.AuthCodeCreate) gatehouse.AuthCodeCreate {
		if c.CallbackURL == "" {
			c.CallbackURL = "https://app.example.com/callback"
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		c     gatehouse.AuthCodeCreate
		field string
	}{
		{"https", gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb?x=1"}, ""},
		{"https with port", gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com:8443/cb"}, ""},
		{"http localhost", gatehouse.AuthCodeCreate{CallbackURL: "http://localhost:3000"}, ""},
		{"http localhost no port", gatehouse.AuthCodeCreate{CallbackURL: "http://localhost/cb"}, ""},
		{"http 127.0.0.1", gatehouse.AuthCodeCreate{CallbackURL: "http://127.0.0.1:9/cb"}, ""},
		{"http ::1", gatehouse.AuthCodeCreate{CallbackURL: "http://[::1]:8080/cb"}, ""},
		{"missing", gatehouse.AuthCodeCreate{}, "callback_url"},
		{"http remote", gatehouse.AuthCodeCreate{CallbackURL: "http://example.com"}, "callback_url"},
		{"http localhost lookalike", gatehouse.AuthCodeCreate{CallbackURL: "http://localhost.example.com/cb"}, "callback_url"},
		{"ftp", gatehouse.AuthCodeCreate{CallbackURL: "ftp://example.com/cb"}, "callback_url"},
		{"javascript", gatehouse.AuthCodeCreate{CallbackURL: "javascript:alert(1)"}, "callback_url"},
		{"relative", gatehouse.AuthCodeCreate{CallbackURL: "/callback"}, "callback_url"},
		{"no host", gatehouse.AuthCodeCreate{CallbackURL: "https:///cb"}, "callback_url"},
		{"user info", gatehouse.AuthCodeCreate{CallbackURL: "https://user:pw@app.example.com/cb"}, "callback_url"},
		{"not a url", gatehouse.AuthCodeCreate{CallbackURL: "::not a url"}, "callback_url"},
		{"http LOCALHOST", gatehouse.AuthCodeCreate{CallbackURL: "HTTP://LOCALHOST:3000/cb"}, ""},
		{"http ::1", gatehouse.AuthCodeCreate{CallbackURL: "http://[::1]:3000/cb"}, ""},
		{"https ip", gatehouse.AuthCodeCreate{CallbackURL: "https://192.0.2.7/cb"}, ""},
		{"https punycode", gatehouse.AuthCodeCreate{CallbackURL: "https://xn--bcher-kva.example/cb"}, ""},
		{"wildcard host", gatehouse.AuthCodeCreate{CallbackURL: "https://*"}, "callback_url"},
		{"wildcard subdomain", gatehouse.AuthCodeCreate{CallbackURL: "https://*.example.com/cb"}, "callback_url"},
		{"semicolon host", gatehouse.AuthCodeCreate{CallbackURL: "https://a.com;script-src/cb"}, "callback_url"},
		{"comma host", gatehouse.AuthCodeCreate{CallbackURL: "https://a.com,https://b.com"}, "callback_url"},
		{"quote host", gatehouse.AuthCodeCreate{CallbackURL: `https://x<y>"z/cb`}, "callback_url"},
		{"empty label", gatehouse.AuthCodeCreate{CallbackURL: "https://a..example/cb"}, "callback_url"},
		{"hyphen edge", gatehouse.AuthCodeCreate{CallbackURL: "https://-a.example/cb"}, "callback_url"},
		{"long label", gatehouse.AuthCodeCreate{CallbackURL: "https://" + strings.Repeat("a", 64) + ".example/cb"}, "callback_url"},
		{"unicode host", gatehouse.AuthCodeCreate{CallbackURL: "https://bücher.example/cb"}, "callback_url"},
		{"challenge", ok(gatehouse.AuthCodeCreate{CodeChallenge: refTo(rfcChallenge)}), ""},
		{"plain challenge", ok(gatehouse.AuthCodeCreate{CodeChallenge: refTo(rfcVerifier), CodeChallengeMethod: refTo("plain")}), ""},
		{"short challenge", ok(gatehouse.AuthCodeCreate{CodeChallenge: refTo(rfcChallenge[:42])}), "code_challenge"},
		{"bad challenge chars", ok(gatehouse.AuthCodeCreate{CodeChallenge: refTo(rfcChallenge[:42] + "+")}), "code_challenge"},
		{"long challenge", ok(gatehouse.AuthCodeCreate{CodeChallenge: refTo(strings.Repeat("a", 129))}), "code_challenge"},
		{"unknown method", ok(gatehouse.AuthCodeCreate{CodeChallenge: refTo(rfcChallenge), CodeChallengeMethod: refTo("S512")}), "code_challenge_method"},
		{"method without challenge", ok(gatehouse.AuthCodeCreate{CodeChallengeMethod: refTo("S256")}), "code_challenge_method"},
		{"limit", ok(gatehouse.AuthCodeCreate{Limit: refTo(gatehouse.USD(5)), UsageLimitType: gatehouse.Weekly}), ""},
		{"negative limit", ok(gatehouse.AuthCodeCreate{Limit: refTo(gatehouse.Money(-1))}), "limit"},
		{"unknown limit type", ok(gatehouse.AuthCodeCreate{UsageLimitType: "yearly"}), "usage_limit_type"},
		{"expires later", ok(gatehouse.AuthCodeCreate{ExpiresAt: &future}), ""},
		{"expired", ok(gatehouse.AuthCodeCreate{ExpiresAt: &past}), "expires_at"},
		{"label", ok(gatehouse.AuthCodeCreate{KeyLabel: refTo(strings.Repeat("l", 100))}), ""},
		{"empty label", ok(gatehouse.AuthCodeCreate{KeyLabel: refTo("")}), "key_label"},
		{"long label", ok(gatehouse.AuthCodeCreate{KeyLabel: refTo(strings.Repeat("l", 101))}), "key_label"},
	} {
		c := tc.c
		errtest.WantField(t, tc.name, c.Validate(now), tc.field)
	}
}

func TestAuthCodeCreateDefaultMethod(t *testing.T) {
	now := utcAt(2028, 2, 23, 12, 0, 0, 0)
	c := gatehouse.AuthCodeCreate{CallbackURL: "https://a.example", CodeChallenge: refTo(rfcChallenge)}
	if err := c.Validate(now); err != nil || c.CodeChallengeMethod == nil || *c.CodeChallengeMethod != gatehouse.MethodS256 {
		t.Errorf("Validate = %v, method %v; want S256", err, c.CodeChallengeMethod)
	}
	c = gatehouse.AuthCodeCreate{CallbackURL: "https://a.example"}
	if err := c.Validate(now); err != nil || c.CodeChallengeMethod != nil {
		t.Errorf("without challenge: Validate = %v, method %v; want none", err, c.CodeChallengeMethod)
	}
}

func TestAuthCodeExchangeValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x     gatehouse.AuthCodeExchange
		field string
	}{
		{"code only", gatehouse.AuthCodeExchange{Code: "ghc_x"}, ""},
		{"S256", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo(rfcVerifier), CodeChallengeMethod: refTo("S256")}, ""},
		{"plain", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo(rfcVerifier), CodeChallengeMethod: refTo("plain")}, ""},
		{"128-char verifier", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo(strings.Repeat("~", 128))}, ""},
		{"no code", gatehouse.AuthCodeExchange{}, "code"},
		{"long code", gatehouse.AuthCodeExchange{Code: strings.Repeat("c", 257)}, "code"},
		{"short verifier", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo(rfcVerifier[:42])}, "code_verifier"},
		{"long verifier", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo(strings.Repeat("a", 129))}, "code_verifier"},
		{"verifier with space", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo(rfcVerifier[:42] + " ")}, "code_verifier"},
		{"empty verifier", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeVerifier: refTo("")}, "code_verifier"},
		{"unknown method", gatehouse.AuthCodeExchange{Code: "ghc_x", CodeChallengeMethod: refTo("s256")}, "code_challenge_method"},
	} {
		errtest.WantField(t, tc.name, tc.x.Validate(), tc.field)
	}
}

func TestCallbackOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://app.example.com/cb?x=1":    "https://app.example.com",
		"https://app.example.com:8443/a/b":  "https://app.example.com:8443",
		"http://localhost:3000":             "http://localhost:3000",
		"http://127.0.0.1:9/cb":             "http://127.0.0.1:9",
		"https://app.example.com/other#tag": "https://app.example.com",
	} {
		if got := gatehouse.CallbackOrigin(in); got != want {
			t.Errorf("CallbackOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewAuthCodeID(t *testing.T) {
	a, b := gatehouse.NewAuthCodeID(), gatehouse.NewAuthCodeID()
	// At least 128 random bits: more than 26 base32 characters after the prefix.
	if a == b || !strings.HasPrefix(a, "ghc_") || len(a)-len("ghc_") < 26 {
		t.Errorf("NewAuthCodeID = %q, %q", a, b)
	}
}
