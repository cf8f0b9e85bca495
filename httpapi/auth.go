package httpapi

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"gatehouse"
	"gatehouse/ratelimit"
)

// principal is the authenticated caller of a request.
type principal struct {
	key *gatehouse.Key
}

// org returns the caller's organization.
func (p *principal) org() string { return p.key.OrganizationID }

// authHandler is a handler for an authenticated caller.
type authHandler func(w http.ResponseWriter, r *http.Request, p *principal) error

// management serves an operation that requires a management key, in its
// organization's share of the database (shared).
func (s *Server) management(h authHandler) http.HandlerFunc {
	return s.authenticated(func(w http.ResponseWriter, r *http.Request, p *principal) error {
		if !p.key.Management {
			return gatehouse.Errorf(gatehouse.EFORBIDDEN, "only management keys can perform this operation")
		}
		return s.shared(h)(w, r, p)
	})
}

// shared runs h once the caller's organization has a slot of its share of
// the database's connections (SetShares): one organization's many heavy
// reads queue behind each other, never another organization's.
func (s *Server) shared(h authHandler) authHandler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		// The body is read first (as far as a management handler reads
		// one, MaxBodyBytes, and a byte more for it to refuse): a client
		// slow to send it holds no share of the database meanwhile.
		if r.Body != nil && r.Body != http.NoBody {
			buf, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
			if err != nil {
				return gatehouse.WrapError(err, gatehouse.EINVALID, "could not read the request body")
			}
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), r.Body))
		}
		release, err := s.shares.Enter(r.Context(), p.org())
		if err != nil {
			return err
		}
		defer release()
		return h(w, r, p)
	}
}

// authenticated serves an operation open to any valid key. The rate limit
// applies per key; a request whose credential is refused is limited per
// client IP instead.
func (s *Server) authenticated(h authHandler) http.HandlerFunc {
	return s.serve(s.withKey(h, s.authenticate))
}

// withKey runs h for the caller that authenticate names (see
// authenticated).
func (s *Server) withKey(h authHandler, authenticate func(*http.Request) (*gatehouse.Key, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		key, authErr := authenticate(r)
		var bucket string
		if authErr == nil {
			bucket = "key:" + key.Hash
			if rec, ok := w.(*recorder); ok {
				rec.keyHash = key.Hash
			}
		} else {
			// Failed authentications have buckets of their own, per address, so
			// that a flood of bogus tokens cannot starve the code exchange.
			bucket = "authfail:" + addressBucket(s.clientIP(r))
		}
		if err := s.rateLimit(w, r.Context(), bucket); err != nil {
			return err
		}
		if authErr != nil {
			return authErr
		}
		if err := checkRequestText(r); err != nil {
			return err
		}
		// The stores record the caller of every change in the audit log.
		r = r.WithContext(gatehouse.WithActor(r.Context(), gatehouse.Actor{KeyHash: key.Hash, UserID: key.CreatorUserID}))
		return h(w, r, &principal{key: key})
	}
}

// public serves an operation that needs no credential, limited per client IP.
func (s *Server) public(h handlerFunc) http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.rateLimit(w, r.Context(), "public:"+addressBucket(s.clientIP(r))); err != nil {
			return err
		}
		return h(w, r)
	})
}

// authenticate returns the active key named by the bearer token.
func (s *Server) authenticate(r *http.Request) (*gatehouse.Key, error) {
	token, err := bearerToken(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	return s.keyOf(r.Context(), token)
}

// keyOf returns the active key whose plaintext is token.
func (s *Server) keyOf(ctx context.Context, token string) (*gatehouse.Key, error) {
	key, err := s.store.FindKeyByHash(ctx, gatehouse.HashKey(token))
	switch {
	case gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND:
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "invalid API key")
	case err != nil:
		return nil, err
	case key.Disabled:
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "API key is disabled")
	case key.Expired(s.now()):
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "API key has expired")
	}
	return key, nil
}

// bearerToken extracts the token of an "Authorization: Bearer <token>" header.
func bearerToken(header string) (string, error) {
	if header == "" {
		return "", gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "missing Authorization header: send Authorization: Bearer <API key>")
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "the Authorization header must use the Bearer scheme")
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") || len(token) > 512 {
		return "", gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "the bearer token is empty or malformed")
	}
	return token, nil
}

// rateLimit takes one request from the bucket, sets the rate-limit headers,
// and returns ERATELIMIT when the bucket is empty. A failing limiter does
// not stop requests: it is logged and the request proceeds.
func (s *Server) rateLimit(w http.ResponseWriter, ctx context.Context, bucket string) error {
	res, err := s.limiter.Allow(ctx, bucket)
	if err != nil {
		s.logger.Warn("rate limiter failed; request allowed", "error", err.Error())
		return nil
	}
	if res.Limit <= 0 {
		return nil
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt((res.ResetAt.UnixNano()+999_999)/1_000_000, 10))
	if res.Allowed {
		return nil
	}
	retry := int64(math.Ceil(res.RetryAfter.Seconds()))
	h.Set("Retry-After", strconv.FormatInt(max(retry, 1), 10))
	return &gatehouse.Error{Code: gatehouse.ERATELIMIT, Message: "rate limit exceeded; retry after " + strconv.FormatInt(max(retry, 1), 10) + " s",
		Metadata: map[string]any{"retry_after_seconds": max(retry, 1)}}
}

var _ ratelimit.Limiter = ratelimit.Unlimited{}
