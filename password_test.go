package gatehouse_test

import (
	"regexp"
	"strings"
	"testing"

	"gatehouse"
)

// Hashes that the reference implementation of Argon2 made (the argon2
// command of Debian's argon2 package), for the password below:
//
//	echo -n "correct horse battery" | argon2 gatehouse-salt16 -id -t 2 -k 19456 -p 1 -l 32 -e
//	echo -n "correct horse battery" | argon2 saltsalt -id -t 1 -m 13 -p 2 -l 16 -e
const (
	referencePassword = "correct horse battery"
	referenceDefault  = "$argon2id$v=19$m=19456,t=2,p=1$Z2F0ZWhvdXNlLXNhbHQxNg$EVhcFlJIR8Ggx544rw8DEDTT6rGGYuO+H6tcmZCUdfM"
	referenceWeaker   = "$argon2id$v=19$m=8192,t=1,p=2$c2FsdHNhbHQ$JajesdZlEFDRfuECw1e08Q"
)

func TestHashPassword(t *testing.T) {
	h1 := gatehouse.HashPassword(referencePassword)
	h2 := gatehouse.HashPassword(referencePassword)
	phc := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !phc.MatchString(h1) {
		t.Fatalf("HashPassword = %q, want the PHC string of OWASP's parameters with a 16-byte salt and a 32-byte hash", h1)
	}
	if h1 == h2 {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	for _, h := range []string{h1, h2} {
		if match, err := gatehouse.VerifyPassword(h, referencePassword); !match || err != nil {
			t.Errorf("VerifyPassword(own hash, password) = %v, %v", match, err)
		}
		if match, err := gatehouse.VerifyPassword(h, referencePassword+" "); match || err != nil {
			t.Errorf("VerifyPassword(own hash, another password) = %v, %v", match, err)
		}
	}
	if gatehouse.PasswordNeedsRehash(h1) {
		t.Error("PasswordNeedsRehash of a fresh hash")
	}
}

// TestVerifyPasswordReference: hashes of the reference implementation
// verify, whatever their parameters, so that the defaults can change.
func TestVerifyPasswordReference(t *testing.T) {
	for _, c := range []struct {
		hash   string
		rehash bool // made with other parameters than the defaults
	}{{referenceDefault, false}, {referenceWeaker, true}} {
		if match, err := gatehouse.VerifyPassword(c.hash, referencePassword); !match || err != nil {
			t.Errorf("VerifyPassword(%s) = %v, %v; want a match", c.hash, match, err)
		}
		if match, err := gatehouse.VerifyPassword(c.hash, "correct horse battery staple"); match || err != nil {
			t.Errorf("VerifyPassword(%s, wrong password) = %v, %v", c.hash, match, err)
		}
		if got := gatehouse.PasswordNeedsRehash(c.hash); got != c.rehash {
			t.Errorf("PasswordNeedsRehash(%s) = %v, want %v", c.hash, got, c.rehash)
		}
	}
}

func TestVerifyPasswordMalformed(t *testing.T) {
	good := strings.Split(referenceWeaker, "$")
	with := func(i int, v string) string {
		parts := append([]string(nil), good...)
		parts[i] = v
		return strings.Join(parts, "$")
	}
	for _, hash := range []string{
		"",
		referencePassword,
		"$argon2i$v=19$m=8192,t=1,p=2$c2FsdHNhbHQ$JajesdZlEFDRfuECw1e08Q",
		with(2, "v=16"),
		with(3, "m=8192,t=1"),
		with(3, "m=08192,t=1,p=2"),
		with(3, "m=8192,t=1,p=2,x=1"),
		with(3, "m=8192, t=1,p=2"),
		with(3, "m=-1,t=1,p=2"),
		with(3, "m=8192,t=0,p=2"),
		with(3, "m=8192,t=65,p=2"),
		with(3, "m=8192,t=1,p=0"),
		with(3, "m=8192,t=1,p=256"),
		with(3, "m=4294967295,t=1,p=2"), // 4 TiB: never computed
		with(3, "m=15,t=1,p=2"),         // less than 8 KiB a lane
		with(4, "c2FsdA"),               // a 4-byte salt
		with(4, "c2FsdHNhbHQ="),         // padding
		with(4, "!!"),
		with(5, "SmFqZQ"), // a 4-byte hash
		with(5, ""),
		referenceWeaker + "$",
	} {
		match, err := gatehouse.VerifyPassword(hash, referencePassword)
		if match || err == nil {
			t.Errorf("VerifyPassword(%q) = %v, %v; want an error", hash, match, err)
		}
		if !gatehouse.PasswordNeedsRehash(hash) {
			t.Errorf("PasswordNeedsRehash(%q) = false", hash)
		}
	}
}

func TestValidatePassword(t *testing.T) {
	for _, c := range []struct {
		password, err string
	}{
		{strings.Repeat("a", 12), ""},
		{"ünïcödé pässwörd", ""},
		{strings.Repeat("é", 1024), ""},
		{"  spaced  out  ", ""},
		{"", "pw: must be at least 12 characters (got 0)"},
		{strings.Repeat("a", 11), "pw: must be at least 12 characters (got 11)"},
		{strings.Repeat("é", 11), "pw: must be at least 12 characters (got 11)"},
		{strings.Repeat("a", 1025), "pw: must be at most 1024 characters (got 1025)"},
		{strings.Repeat(" ", 12), "pw: must not be only spaces"},
		{"twelve chars\xff", "pw: must be valid UTF-8 text"},
	} {
		err := gatehouse.ValidatePassword("pw", c.password)
		if got := gatehouse.ErrorMessage(err); err != nil && got != c.err || err == nil && c.err != "" {
			t.Errorf("ValidatePassword(%.20q) = %v, want %q", c.password, err, c.err)
		}
		if err != nil && gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("ValidatePassword(%.20q): code %s", c.password, gatehouse.ErrorCode(err))
		}
	}
}

func TestAccountTokens(t *testing.T) {
	a, b := gatehouse.NewAccountToken(), gatehouse.NewAccountToken()
	if a == b || len(a) != 43 || strings.ContainsAny(a, "+/=") {
		t.Errorf("NewAccountToken = %q, %q: want two different 43-character base64url strings", a, b)
	}
	if id := gatehouse.AccountTokenID(a); len(id) != 64 || id == gatehouse.AccountTokenID(b) || !gatehouse.IsKeyHash(id) {
		t.Errorf("AccountTokenID = %q", id)
	}
}
