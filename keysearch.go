package gatehouse

import (
	"strconv"
	"strings"
	"time"
)

// The console pages through the keys of organizations that hold millions
// of them, so it never counts nor skips: a page ends with a cursor (where
// the next page starts), and each page is one walk along an index. A list
// runs newest first; a search by name runs in name order.

// KeySearch selects one page of an organization's regular keys, disabled
// ones included.
type KeySearch struct {
	// NamePrefix keeps the keys whose name starts with it, ASCII letters
	// matched in either case, ordered by name; "" lists every key, newest
	// first.
	NamePrefix string
	// HashPrefix, when set, keeps only the keys whose hash starts with it
	// (lowercase hex), ordered by hash; NamePrefix is then ignored.
	HashPrefix string
	// CreatorUserID keeps only the keys this member created.
	CreatorUserID *string
	// WorkspaceID keeps only the keys of one workspace (its id).
	WorkspaceID string
	// After is where the page starts: the cursor of the previous page.
	After *KeyCursor
	// Limit is the page's size: 1..MaxKeysPerList, default MaxKeysPerList.
	Limit int
}

// KeyCursor is the position after the last key of a page, in the order of
// its search.
type KeyCursor struct {
	CreatedAt time.Time
	Name      string // the key's name folded by FoldKeyName, in name order
	Hash      string
}

// KeyPage is a page of a KeySearch; Next is nil on the last page.
type KeyPage struct {
	Keys []*Key
	Next *KeyCursor
}

// MinHashPrefix is the shortest hash prefix a search accepts: shorter
// ones match too many keys to be what someone looks for.
const MinHashPrefix = 6

// FoldKeyName folds a key name for name order and prefix search: ASCII
// letters to lower case, nothing else (what both databases' lower() of
// the name does, byte for byte, so that an index serves the search).
func FoldKeyName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Validate checks the search and sets its default size.
func (s *KeySearch) Validate() error {
	switch {
	case s.Limit == 0:
		s.Limit = MaxKeysPerList
	case s.Limit < 0 || s.Limit > MaxKeysPerList:
		return FieldError("limit", "must be from 1 to %d", MaxKeysPerList)
	}
	if !IsPlainText(s.NamePrefix) {
		return FieldError("q", "must be UTF-8 text without NUL characters")
	}
	if len(s.NamePrefix) > 4*MaxNameLength {
		return FieldError("q", "must be at most %d characters", MaxNameLength)
	}
	if h := s.HashPrefix; h != "" && (len(h) < MinHashPrefix || len(h) > 64 || !isLowerHex(h)) {
		return FieldError("q", "a hash prefix must be %d to 64 lowercase hexadecimal digits", MinHashPrefix)
	}
	return nil
}

// ParseKeyQuery reads what someone typed in the keys page's search box: a
// key's plaintext (which finds that key by its hash), a hash prefix
// (MinHashPrefix or more hex digits, any case), or the start of a name.
func ParseKeyQuery(q string) KeySearch {
	q = strings.TrimSpace(q)
	switch lower := strings.ToLower(q); {
	case strings.HasPrefix(q, KeyPrefix) || strings.HasPrefix(q, ManagementKeyPrefix):
		return KeySearch{HashPrefix: HashKey(q)}
	case len(q) >= MinHashPrefix && len(q) <= 64 && isLowerHex(lower):
		return KeySearch{HashPrefix: lower}
	default:
		return KeySearch{NamePrefix: q}
	}
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CursorAfter returns the cursor that follows key k in the order of the
// search.
func (s *KeySearch) CursorAfter(k *Key) *KeyCursor {
	c := &KeyCursor{CreatedAt: k.CreatedAt, Hash: k.Hash}
	if s.HashPrefix == "" && s.NamePrefix != "" {
		c.Name = FoldKeyName(k.Name)
	}
	return c
}

// String encodes the cursor for a URL: milliseconds, hash and folded name.
func (c *KeyCursor) String() string {
	return strconv.FormatInt(c.CreatedAt.UnixMilli(), 10) + "." + c.Hash + "." + c.Name
}

// ParseKeyCursor decodes a cursor that String encoded. EINVALID.
func ParseKeyCursor(s string) (*KeyCursor, error) {
	msPart, rest, ok1 := strings.Cut(s, ".")
	hash, name, ok2 := strings.Cut(rest, ".")
	ms, err := strconv.ParseInt(msPart, 10, 64)
	if !ok1 || !ok2 || err != nil || !IsKeyHash(hash) || len(name) > 4*MaxNameLength {
		return nil, FieldError("after", "is not a cursor of the keys list: start again from the first page")
	}
	return &KeyCursor{CreatedAt: time.UnixMilli(ms).UTC(), Hash: hash, Name: name}, nil
}
