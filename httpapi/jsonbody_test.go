package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// readObjectCases are bodies on both sides of each rule of the scanner:
// escapes, characters encoding/json escapes, invalid UTF-8, NUL, keys out
// of order at every depth, duplicates (after enough keys to be indexed),
// and the nesting bound.
var readObjectCases = []string{
	`{"model":"a","messages":[{"role":"user","content":"hi"}]}`,
	` {"b" : 1 , "a" : [ 1 , 2.50 , -0 , 1e400 , true , false , null ] } `,
	`{"x":{"z":1,"y":{"b":[{"d":1,"c":2}],"a":null},"x":"\u00e9\n"}}`,
	`{"s":"<a href=\"x\">&amp;</a>","t":"\u2028\u2029","u":"` + "\u2028" + `","v":"é ☃ 😀","w":"\ud83d\ude00"}`,
	"{\"bad\":\"\xff\xfe\",\"k\xff\":1}",
	`{"max\u005ftokens":5}`,
	`{"k":"a\u0000b"}`,
	`{"a":{"k\u0000":1}}`,
	`{"a":1,"a":2}`,
	`{"a":{"b":1,"b":2}}`,
	`{"a":{"b":1,"\u0062":2}}`,
	`{"a":1,"A":2}`,
	`{"a":"\/\b\f\t\r\n\"\\"}`,
	`{"a":[]}`, `{"a":{}}`, `{}`, `[]`, `"x"`, `{"a":1}x`, `{"a":1`, ``, ` `, `{"a":1}{}`,
	`{"a":01}`, `{"a":tru}`, `{"a":"\x"}`, "{\"a\":\"\t\"}",
	`{"messages":[{"content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}],"role":"user"}]}`,
	manyKeys(40, false), manyKeys(40, true),
	nested(63), nested(64), nested(65),
}

func manyKeys(n int, dup bool) string {
	var b strings.Builder
	b.WriteString(`{"o":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", n-i) + `":1`)
	}
	if dup {
		b.WriteString(`,"kxxx":2`)
	}
	b.WriteString(`}}`)
	return b.String()
}

func nested(depth int) string {
	return `{"a":` + strings.Repeat(`[{"b":`, depth/2) + strings.Repeat(`[`, depth%2) + `1` +
		strings.Repeat(`]`, depth%2) + strings.Repeat(`}]`, depth/2) + `}`
}

func TestReadObject(t *testing.T) {
	refused := 0
	for _, body := range readObjectCases {
		if checkReadObject(t, []byte(body)) != nil {
			refused++
		}
	}
	if refused != 20 { // the one with stray bytes among them: not UTF-8
		t.Errorf("%d of %d bodies refused, want 20", refused, len(readObjectCases))
	}
}

// FuzzReadObject: readObject refuses exactly the bodies scanObject refuses,
// with its error, and re-encodes every value exactly as encoding/json does
// after decoding it into an any (UseNumber), which is what the provider
// was sent before the scanner, with the keys in the body's order.
func FuzzReadObject(f *testing.F) {
	for _, body := range readObjectCases {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkReadObject(t, []byte(body))
	})
}

// checkReadObject checks readObject against encoding/json on body, and
// returns its error.
func checkReadObject(t *testing.T, body []byte) error {
	t.Helper()
	ms, err := readObject(body)
	_, scanErr := scanObject(body, nil)
	if (err == nil) != (scanErr == nil) || (err != nil && err.Error() != scanErr.Error()) {
		t.Fatalf("%q: readObject says %v, scanObject %v", body, err, scanErr)
	}
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.Token() // {
	for i := 0; dec.More(); i++ {
		k, _ := dec.Token()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(ms) || ms[i].Key != k || !bytes.Equal(ms[i].Canon, want) {
			t.Fatalf("%q: member %d is %q: %s, want %q: %s", body, i, ms[i].Key, ms[i].Canon, k, want)
		}
		var written any
		d := json.NewDecoder(bytes.NewReader(ms[i].Value))
		d.UseNumber()
		if err := d.Decode(&written); err != nil || d.InputOffset() != int64(len(ms[i].Value)) {
			t.Fatalf("%q: member %d's value as written is %q", body, i, ms[i].Value)
		}
		if again, _ := json.Marshal(written); !bytes.Equal(again, want) {
			t.Fatalf("%q: member %d's value as written is %q", body, i, ms[i].Value)
		}
		if i == len(ms)-1 && dec.More() {
			t.Fatalf("%q: %d members, want more", body, len(ms))
		}
	}
	return nil
}
