package gatehouse

import (
	"strings"
	"unicode/utf8"
)

// Display strings (names, labels, descriptions) are shown to people: in the
// console, in dashboards, in terminals. A control character can rewrite a
// terminal line or a log, and a bidirectional override can make a name read
// as something else ("key‮gnp.exe" shows as "keyexe.png"), so neither is
// accepted.

// CheckDisplayText refuses control characters (C0, DEL and C1) and Unicode
// bidirectional controls in a display string; multiline allows newlines and
// tabs, for descriptions. The error names field.
func CheckDisplayText(field, s string, multiline bool) error {
	for _, r := range s {
		switch {
		case multiline && (r == '\n' || r == '\t' || r == '\r'):
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return FieldError(field, "must not contain control characters (found U+%04X)", r)
		case isBidiControl(r):
			return FieldError(field, "must not contain bidirectional text controls (found U+%04X), which can make text read as something else", r)
		}
	}
	return nil
}

// isBidiControl reports the characters that change the direction in which
// text is displayed: embeddings and overrides, isolates, and the marks.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200e || r == 0x200f || r == 0x061c
}

// IsPlainText reports whether s is UTF-8 without a NUL byte: what a text
// column holds. PostgreSQL fails a statement given anything else, instead
// of finding nothing, so text from outside (a form, a query string) is
// checked before it reaches a query.
func IsPlainText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// StorableText makes a provider's text storable by every engine: PostgreSQL
// refuses NUL in text, and a refused settle would leave the call unmetered.
func StorableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
