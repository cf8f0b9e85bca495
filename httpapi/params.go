package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"gatehouse"

	"github.com/google/uuid"
)

// pageParams reads the offset (>= 0, default 0) and limit (1..100, default
// 50) query parameters.
func pageParams(r *http.Request) (gatehouse.Page, error) {
	p := gatehouse.Page{Limit: gatehouse.DefaultPageSize}
	q := r.URL.Query()
	var err error
	if p.Offset, err = intParam(q, "offset", 0, 0, maxOffset); err != nil {
		return p, err
	}
	if p.Limit, err = intParam(q, "limit", gatehouse.DefaultPageSize, 1, gatehouse.MaxPageSize); err != nil {
		return p, err
	}
	return p, nil
}

// list serves a paginated list: find returns one page of T and the total,
// toJSON renders each T.
func list[T, J any](find func(r *http.Request, p *principal, page gatehouse.Page) ([]T, int, error), toJSON func(T) J) authHandler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		page, err := pageParams(r)
		if err != nil {
			return err
		}
		items, total, err := find(r, p, page)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, listJSON[J]{mapSlice(items, toJSON), total})
	}
}

// maxOffset keeps offsets within what every database accepts.
const maxOffset = 1 << 31

// intParam parses an integer query parameter within [lo, hi].
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	vs, given := q[name]
	if !given {
		return def, nil
	}
	if len(vs) > 1 {
		return 0, repeatedParam(name)
	}
	return intValue(vs[0], name, lo, hi)
}

// intValue parses the value of an integer query parameter within [lo, hi].
func intValue(raw, name string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(raw)
	if err != nil || v < lo || v > hi {
		return 0, gatehouse.FieldError(name, "must be an integer from %d to %d", lo, hi)
	}
	return v, nil
}

// boolParam parses a boolean query parameter: true or false (also 1 or 0).
func boolParam(r *http.Request, name string) (bool, error) {
	vs, given := r.URL.Query()[name]
	if !given {
		return false, nil
	}
	if len(vs) > 1 {
		return false, repeatedParam(name)
	}
	v, err := strconv.ParseBool(vs[0])
	if err != nil {
		return false, gatehouse.FieldError(name, "must be true or false")
	}
	return v, nil
}

// uuidPath returns the path value name when it is a UUID. Anything else
// cannot name a resource, so it is 404 like an unknown id.
func uuidPath(r *http.Request, name, kind string) (string, error) {
	id := r.PathValue(name)
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", gatehouse.NotFound(kind, id)
	}
	return u.String(), nil
}

// keyHashPath returns the key hash in the path, or 404 if it cannot be one.
func keyHashPath(r *http.Request) (string, error) {
	hash := r.PathValue("hash")
	if !gatehouse.IsKeyHash(hash) {
		return "", gatehouse.NotFound("key", hash)
	}
	return hash, nil
}

// checkRequestText refuses path ids and free-text query values that are
// not UTF-8 or hold a NUL byte. No resource can be named by one, and
// PostgreSQL fails a query that compares one with a text column instead of
// finding nothing, so they stop here: a path id is 404, like any malformed
// id, and a query parameter is 400.
func checkRequestText(r *http.Request) error {
	for _, wildcard := range []string{"hash", "id", "user_id", "slug", "version"} {
		if v := r.PathValue(wildcard); !plainText(v) {
			return gatehouse.NotFound(pathKind(r.Pattern), v)
		}
	}
	names := textQuery[r.Pattern]
	if len(names) == 0 {
		return nil // no query to parse: most routes
	}
	q := r.URL.Query()
	if err := singleValues(q, names...); err != nil {
		return err
	}
	for _, name := range names {
		if !plainText(q.Get(name)) {
			return gatehouse.FieldError(name, "must be UTF-8 text without NUL characters")
		}
	}
	return nil
}

// textQuery lists, by route pattern, the query parameters that reach the
// store as text. (offset, limit and the booleans are parsed strictly.)
var textQuery = map[string][]string{
	"GET /api/v1/keys":                       {"workspace_id"},
	"GET /api/v1/guardrails":                 {"workspace_id"},
	"GET /api/v1/observability/destinations": {"workspace_id"},
	"GET /api/v1/byok":                       {"workspace_id", "provider"},
	"GET /api/v1/audit-log":                  {"actor", "operation", "resource_type", "resource_id"},

	"GET /api/v1/presets":                           {"workspace_id"},
	"GET /api/v1/presets/{slug}":                    {"workspace_id"},
	"GET /api/v1/presets/{slug}/versions":           {"workspace_id"},
	"GET /api/v1/presets/{slug}/versions/{version}": {"workspace_id"},
	"POST /api/v1/presets/{slug}/chat/completions":  {"workspace_id"},
	"POST /api/v1/presets/{slug}/messages":          {"workspace_id"},
	"POST /api/v1/presets/{slug}/responses":         {"workspace_id"},
	"GET /api/v1/activity":                          {"user_id", "workspace_id"},
	"GET /api/v1/scim/groups":                       {"display_name", "external_id"},
}

// plainText reports whether s is UTF-8 without a NUL byte.
func plainText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// pathKind names the resource that the id in a route pattern designates.
func pathKind(pattern string) string {
	switch {
	case strings.Contains(pattern, "/keys/{"):
		return "key"
	case strings.Contains(pattern, "/workspaces/{"):
		return "workspace"
	case strings.Contains(pattern, "/guardrails/{"):
		return "guardrail"
	case strings.Contains(pattern, "/destinations/{"):
		return "destination"
	case strings.Contains(pattern, "/byok/{"):
		return "byok key"
	case strings.Contains(pattern, "/members/{"):
		return "member"
	case strings.Contains(pattern, "/presets/{"):
		return "preset"
	}
	return "resource"
}

// repeatedParam is the error of a query parameter given more than once:
// which value counts would be a guess, and a proxy in front of Gatehouse
// may guess otherwise.
func repeatedParam(name string) error {
	return gatehouse.FieldError(name, "is given more than once in the query")
}

// singleValues refuses a query parameter of names given more than once.
func singleValues(q url.Values, names ...string) error {
	for _, n := range names {
		if len(q[n]) > 1 {
			return repeatedParam(n)
		}
	}
	return nil
}
