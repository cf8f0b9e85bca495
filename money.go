package gatehouse

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// Money is an amount of US dollars counted in nano-dollars (1e-9 USD).
// Amounts are exact integers: they are added, never accumulated in floating
// point. On the wire Money is a plain JSON number of dollars.
type Money int64

// NanosPerUSD is the number of Money units in one dollar.
const NanosPerUSD = 1_000_000_000

// MaxMoney is the largest amount accepted on input: one billion dollars.
// It keeps every sum of amounts far from int64 overflow.
const MaxMoney = Money(1_000_000_000 * NanosPerUSD)

// USD returns the Money worth d whole dollars.
func USD(d int64) Money { return Money(d * NanosPerUSD) }

// errMoneySyntax is returned by ParseMoney for text that is not a JSON number.
var errMoneySyntax = errors.New("not a decimal number")

// errMoneyRange is returned by ParseMoney for numbers beyond ±MaxMoney.
var errMoneyRange = errors.New("number out of range")

// ParseMoney parses the text of a JSON number of dollars, such as "1.5",
// "0.000000001" or "2e-3", into Money. Digits beyond the ninth decimal place
// are rounded half away from zero. Magnitudes above MaxMoney are refused.
func ParseMoney(s string) (Money, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(s, "e")
	if !hasExp {
		mant, exp, hasExp = strings.Cut(s, "E")
	}
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if !isDigits(intPart) || (hasFrac && !isDigits(frac)) {
		return 0, errMoneySyntax
	}
	scale := len(frac) // value = digits × 10^-scale
	if hasExp {
		sign, expDigits := "", exp
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			sign, expDigits = exp[:1], exp[1:]
		}
		if !isDigits(expDigits) {
			return 0, errMoneySyntax
		}
		// Leading zeros are valid JSON; an exponent of seven digits or more
		// is refused from its length, before any arithmetic.
		expDigits = strings.TrimLeft(expDigits, "0")
		if len(expDigits) > 6 {
			return 0, errMoneySyntax
		}
		e, _ := strconv.Atoi(sign + expDigits)
		scale -= e
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, nil
	}
	// nanos = digits × 10^(9-scale), rounded when 9-scale < 0. Only the
	// digits at or above the nano-dollar and the one after it matter, so a
	// long fraction costs no arithmetic on big numbers.
	shift := 9 - scale
	if len(digits)+shift > 19 {
		return 0, errMoneyRange
	}
	keep := len(digits) + min(shift, 0) // digits at or above the nano-dollar
	if keep < 0 {                       // below a tenth of a nano-dollar: rounds to zero
		return 0, nil
	}
	var n uint64 // at most 19 digits (with the rounding, 10^19): no overflow
	for i := 0; i < keep; i++ {
		n = n*10 + uint64(digits[i]-'0')
	}
	for range max(shift, 0) {
		n *= 10
	}
	if keep < len(digits) && digits[keep] >= '5' { // half away from zero
		n++
	}
	if n > uint64(MaxMoney) {
		return 0, errMoneyRange
	}
	if neg {
		return -Money(n), nil
	}
	return Money(n), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String formats m as a decimal number of dollars with no trailing zeros:
// "0", "1.5", "-0.000000001".
func (m Money) String() string {
	var b [24]byte
	return string(m.AppendDecimal(b[:0]))
}

// AppendDecimal appends m as String formats it, allocating nothing beyond
// what b needs to grow.
func (m Money) AppendDecimal(b []byte) []byte {
	u := uint64(m)
	if m < 0 {
		b = append(b, '-')
		u = uint64(-m)
	}
	b = strconv.AppendUint(b, u/NanosPerUSD, 10)
	frac := u % NanosPerUSD
	if frac == 0 {
		return b
	}
	var buf [10]byte
	digits := strconv.AppendUint(buf[:0], frac+NanosPerUSD, 10)[1:] // zero-padded to 9
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	return append(append(b, '.'), digits...)
}

// MarshalJSON encodes m as a JSON number of dollars, exactly.
func (m Money) MarshalJSON() ([]byte, error) {
	return m.AppendDecimal(make([]byte, 0, 24)), nil
}

// UnmarshalJSON decodes a JSON number of dollars. Anything else, or a number
// beyond MaxMoney, is a *json.UnmarshalTypeError so that the decoder names the
// field. JSON null leaves m unchanged, as encoding/json does for numbers.
func (m *Money) UnmarshalJSON(data []byte) error {
	s := string(data)
	if s == "null" {
		return nil
	}
	v, err := ParseMoney(s)
	if err != nil {
		kind := "number"
		if len(s) > 0 && (s[0] == '"' || s[0] == '{' || s[0] == '[' || s[0] == 't' || s[0] == 'f') {
			kind = jsonKind(s[0])
		}
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[Money]()}
	}
	*m = v
	return nil
}

// jsonKind names the JSON type that starts with byte c, as encoding/json does.
func jsonKind(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	default:
		return "number"
	}
}
