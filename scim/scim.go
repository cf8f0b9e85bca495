// Package scim serves SCIM 2.0 (RFC 7643, 7644) at /scim/v2 so that an
// organization's identity provider (Entra ID, Okta...) creates, updates,
// deactivates and deletes its members and pushes its groups. The protocol
// (schemas, validation, filters, PATCH paths, list and error responses) is
// github.com/elimity-com/scim's; this package authenticates the
// organization's bearer token, translates SCIM resources to the store's
// (gatehouse.SCIMService) and back, and applies PATCH operations to the few
// attributes Gatehouse keeps. What a change does to a member's access (the
// group mappings, the rules of removed members) is the store's.
package scim

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"gatehouse"
	"gatehouse/forwarded"
	"gatehouse/ratelimit"

	"github.com/elimity-com/scim"
	scimerrors "github.com/elimity-com/scim/errors"
	"github.com/elimity-com/scim/optional"
	"github.com/elimity-com/scim/schema"
)

// Prefix is where SCIM is served: the base URL an identity provider is
// given is <public URL> + Prefix.
const Prefix = "/scim/v2"

// MaxBodyBytes bounds a request's body: a group of MaxSCIMGroupMembers
// members fits.
const MaxBodyBytes = 2 << 20

func init() {
	// Entra ID sends booleans as the strings "True" and "False" in PATCH
	// operations ("active": "False"), unless the tenant URL carries a
	// feature flag; the library reads such strings as booleans when told.
	schema.SetAllowStringValues(true)
}

// Handler serves SCIM for every organization, each through its own token.
type Handler struct {
	store   gatehouse.Store
	limiter ratelimit.Limiter
	logger  *slog.Logger
	proxies forwarded.Proxies
	server  scim.Server
}

// NewHandler returns the SCIM handler over store; limiter bounds the
// requests per token, and per client address for those whose token is
// refused (as the API's limiter does). publicURL, when given, makes the
// resources' locations absolute (<publicURL>/scim/v2/Users/…).
func NewHandler(store gatehouse.Store, limiter ratelimit.Limiter, logger *slog.Logger, proxies forwarded.Proxies, publicURL string) (*Handler, error) {
	h := &Handler{store: store, limiter: limiter, logger: logger, proxies: proxies}
	users := &userHandler{h: h}
	groups := &groupHandler{h: h}
	server, err := scim.NewServer(&scim.ServerArgs{
		ServiceProviderConfig: &scim.ServiceProviderConfig{
			DocumentationURI: optional.NewString("https://github.com/gatehouse/gatehouse#scim-provisioning"),
			SupportFiltering: true,
			SupportPatch:     true,
			MaxResults:       gatehouse.MaxPageSize,
			AuthenticationSchemes: []scim.AuthenticationScheme{{Type: scim.AuthenticationTypeOauthBearerToken,
				Name: "Bearer token", Description: "The organization's SCIM token (sk-gh-scim-v1-…), from POST /api/v1/scim/token", Primary: true}},
		},
		ResourceTypes: []scim.ResourceType{
			{ID: optional.NewString("User"), Name: "User", Endpoint: "/Users", Description: optional.NewString("A member of the organization"),
				Schema: schema.CoreUserSchema(), SchemaExtensions: []scim.SchemaExtension{{Schema: schema.ExtensionEnterpriseUser()}}, Handler: users},
			{ID: optional.NewString("Group"), Name: "Group", Endpoint: "/Groups", Description: optional.NewString("A group of the identity provider"),
				Schema: schema.CoreGroupSchema(), Handler: groups},
		},
	}, baseURL(publicURL)...)
	if err != nil {
		return nil, err
	}
	h.server = server
	return h, nil
}

// baseURL is the option that makes locations absolute, when there is a
// public URL.
func baseURL(publicURL string) []scim.ServerOption {
	if publicURL == "" {
		return nil
	}
	return []scim.ServerOption{scim.WithBaseURL(strings.TrimRight(publicURL, "/") + Prefix)}
}

type orgKey struct{}

// org returns the organization the request's token is of.
func org(r *http.Request) string { return r.Context().Value(orgKey{}).(string) }

// ServeHTTP authenticates the organization's token, then serves the
// request: its changes are made, and audited, with the token's hash as the
// actor's key hash.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, authErr := h.authenticate(r)
	bucket := "authfail:" + forwarded.AddressBucket(h.proxies.ClientIP(r))
	if authErr == nil {
		bucket = "scim:" + tok.Hash
	}
	if res, err := h.limiter.Allow(r.Context(), bucket); err != nil {
		h.logger.Warn("rate limiter failed; SCIM request allowed", "error", err.Error())
	} else if !res.Allowed {
		secs := max(int64(res.RetryAfter.Seconds()+0.999), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, scimerrors.ScimError{Status: http.StatusTooManyRequests, Detail: "Too many requests: retry after " + strconv.FormatInt(secs, 10) + " s."})
		return
	}
	if authErr != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse-scim"`)
		writeError(w, h.scimError(r, authErr))
		return
	}
	ctx := gatehouse.WithActor(r.Context(), gatehouse.Actor{KeyHash: tok.Hash})
	ctx = context.WithValue(ctx, orgKey{}, tok.OrganizationID)
	r = r.WithContext(ctx)
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	r.URL.Path = strings.TrimPrefix(r.URL.Path, "/scim")
	h.server.ServeHTTP(w, r)
}

// authenticate returns the token of the request's bearer credential.
func (h *Handler) authenticate(r *http.Request) (*gatehouse.SCIMToken, error) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > 512 {
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "Send the organization's SCIM token: Authorization: Bearer sk-gh-scim-v1-…")
	}
	tok, err := h.store.AuthenticateSCIM(r.Context(), token)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "This SCIM token is unknown, or was replaced or deleted.")
	}
	return tok, err
}

// writeError writes a SCIM error response.
func writeError(w http.ResponseWriter, e scimerrors.ScimError) {
	body, _ := e.MarshalJSON()
	w.Header().Set("Content-Type", "application/scim+json")
	w.WriteHeader(e.Status)
	w.Write(body)
}

// scimError translates a domain error into SCIM's: its code to a status
// (and scimType), its message to the detail. An error of ours (or of the
// database) is logged with the request's id and shows as "internal error"
// only, as the API's do.
func (h *Handler) scimError(r *http.Request, err error) scimerrors.ScimError {
	msg := gatehouse.ErrorMessage(err)
	switch gatehouse.ErrorCode(err) {
	case gatehouse.EINVALID:
		return scimerrors.ScimError{Status: http.StatusBadRequest, ScimType: scimerrors.ScimTypeInvalidValue, Detail: msg}
	case gatehouse.ECONFLICT:
		return scimerrors.ScimError{Status: http.StatusConflict, ScimType: scimerrors.ScimTypeUniqueness, Detail: msg}
	case gatehouse.ENOTFOUND:
		return scimerrors.ScimError{Status: http.StatusNotFound, Detail: msg}
	case gatehouse.EUNAUTHORIZED:
		return scimerrors.ScimError{Status: http.StatusUnauthorized, Detail: msg}
	case gatehouse.EFORBIDDEN:
		return scimerrors.ScimError{Status: http.StatusForbidden, Detail: msg}
	case gatehouse.EUNAVAILABLE, gatehouse.ETIMEOUT:
		// SCIM has no 503: a 500 that says what is down, which providers retry.
		h.logger.Error("SCIM request failed", "request_id", gatehouse.RequestIDFrom(r.Context()), "error", err.Error())
		return scimerrors.ScimError{Status: http.StatusInternalServerError, Detail: msg}
	}
	h.logger.Error("SCIM request failed", "request_id", gatehouse.RequestIDFrom(r.Context()), "error", err.Error())
	return scimerrors.ScimError{Status: http.StatusInternalServerError, Detail: "internal error"}
}
