package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"gatehouse/httpapi"
)

// openAPIChecker validates real responses against httpapi.OpenAPIDocument().
// It is safe for concurrent use: the document and router are read-only once built.
type openAPIChecker struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	openAPICheckerOnce  sync.Once
	openAPICheckerValue *openAPIChecker
	openAPICheckerErr   error
)

// newOpenAPIChecker loads and validates the document once per test binary.
func newOpenAPIChecker(tb testing.TB) *openAPIChecker {
	tb.Helper()
	openAPICheckerOnce.Do(func() {
		openAPICheckerValue, openAPICheckerErr = loadOpenAPIChecker(httpapi.OpenAPIDocument())
	})
	if openAPICheckerErr != nil {
		tb.Fatalf("openapi.json: %v", openAPICheckerErr)
	}
	return openAPICheckerValue
}

func loadOpenAPIChecker(data []byte) (*openAPIChecker, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapi is %q, want 3.1.x", doc.OpenAPI)
	}
	ctx := context.Background()
	if err := doc.Validate(ctx, openapi3.EnableSchemaPatternValidation(), openapi3.EnableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if doc.Components == nil || doc.Components.Schemas["Error"] == nil {
		return nil, errors.New("components.schemas.Error is missing")
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &openAPIChecker{doc: doc, router: router}, nil
}

// check fails tb when the response is not what the document says: the route
// must exist (an unknown route or a wrong method may only answer 404/405 with
// the shared Error body), the status must be documented for the operation,
// and the body must match the schema of that status.
func (c *openAPIChecker) check(tb testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	tb.Helper()
	if err := c.validate(req, status, header, body); err != nil {
		tb.Errorf("openapi: %s %s -> %d: %v\nbody: %s", req.Method, req.URL.Path, status, err, truncateBody(body))
	}
}

// validate returns why the response does not match the document, or nil.
func (c *openAPIChecker) validate(req *http.Request, status int, header http.Header, body []byte) error {
	if header == nil {
		header = http.Header{}
	}
	lookup := req
	if req.Method == http.MethodHead { // net/http serves HEAD with the GET handler
		lookup = req.Clone(req.Context())
		lookup.Method = http.MethodGet
	}
	route, pathParams, err := c.router.FindRoute(lookup)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		return c.validateUnrouted(http.StatusNotFound, "no documented route", status, header, body)
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return c.validateUnrouted(http.StatusMethodNotAllowed, "method not documented for this path", status, header, body)
	case err != nil:
		return fmt.Errorf("finding route: %w", err)
	}
	if route.Operation.Responses.Status(status) == nil {
		return fmt.Errorf("status %d is not documented for %s (%s %s); documented: %v",
			status, route.Operation.OperationID, route.Method, route.Path, documentedStatuses(route.Operation))
	}
	if req.Method == http.MethodHead {
		return nil
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    lookup,
			PathParams: pathParams,
			Route:      route,
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	input.Options.WithCustomSchemaErrorFunc(shortSchemaError)
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		return fmt.Errorf("%s: %w", route.Operation.OperationID, err)
	}
	if route.Path == "/api/v1/messages" {
		return nil // Anthropic's error shape, which the document checks, has no code
	}
	return checkErrorCode(status, body)
}

// checkErrorCode checks that error.code of an error body is the HTTP status.
func checkErrorCode(status int, body []byte) error {
	if status < 400 {
		return nil
	}
	var e struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	if code, ok := e.Error.Code.(float64); !ok || code != float64(status) {
		return fmt.Errorf("error.code is %v, want the HTTP status %d", e.Error.Code, status)
	}
	return nil
}

// validateUnrouted accepts a response to an undocumented route or method only
// when it is the expected status with a JSON body of the shared Error schema.
func (c *openAPIChecker) validateUnrouted(want int, why string, status int, header http.Header, body []byte) error {
	if status != want && status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		return fmt.Errorf("%s, so the status must be 404 or 405", why)
	}
	return c.validateError(status, header, body)
}

// validateError checks that a response is JSON and matches the Error schema.
func (c *openAPIChecker) validateError(status int, header http.Header, body []byte) error {
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return fmt.Errorf("error response Content-Type is %q, want application/json", header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error response body is not JSON: %w", err)
	}
	opts := []openapi3.SchemaValidationOption{
		openapi3.EnableJSONSchema2020(), openapi3.MultiErrors(), openapi3.SetSchemaErrorMessageCustomizer(shortSchemaError),
	}
	if err := c.doc.Components.Schemas["Error"].Value.VisitJSON(v, opts...); err != nil {
		return fmt.Errorf("error response body does not match the Error schema: %w", err)
	}
	return checkErrorCode(status, body)
}

// shortSchemaError renders a schema error as its location and reason, without
// the schema and value dumps that would bury the message.
func shortSchemaError(err *openapi3.SchemaError) string {
	reason := err.Reason
	if err.Origin != nil {
		reason = err.Origin.Error()
	}
	if reason == "" {
		reason = "does not match schema keyword " + strconv.Quote(err.SchemaField)
	}
	if ptr := err.JSONPointer(); len(ptr) > 0 {
		return fmt.Sprintf("at %q: %s", "/"+strings.Join(ptr, "/"), reason)
	}
	return reason
}

func documentedStatuses(op *openapi3.Operation) []string {
	var codes []string
	for code := range op.Responses.Map() {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

func truncateBody(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "...(truncated)"
	}
	return string(b)
}

// operations lists every documented operation as "METHOD path".
func (c *openAPIChecker) operations() map[string]*openapi3.Operation {
	ops := map[string]*openapi3.Operation{}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+path] = op
		}
	}
	return ops
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	c := newOpenAPIChecker(t)
	if got := c.doc.OpenAPI; got != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", got)
	}
	if len(c.doc.Servers) != 1 || c.doc.Servers[0].URL != "/" {
		t.Errorf("servers must be exactly [{url: /}]")
	}
	creates := map[string]bool{
		"POST /api/v1/keys": true, "POST /api/v1/workspaces": true,
		"POST /api/v1/guardrails": true, "POST /api/v1/observability/destinations": true, "POST /api/v1/byok": true,
		"POST /api/v1/credits/grants": true, "POST /api/v1/organization/invitations": true,
		"POST /api/v1/organization/members/{user_id}/password-reset": true,
		"POST /api/v1/sso/providers":                                 true, "POST /api/v1/sso/group-mappings": true, "POST /api/v1/scim/token": true,
	}
	public := map[string]bool{"POST /api/v1/auth/keys": true, "GET /api/v1/openapi.json": true, "GET /api/v1/models": true,
		"GET /api/v1/models/count": true, "GET /api/v1/model/{author}/{slug}": true, "GET /api/v1/models/{author}/{slug}/endpoints": true,
		"GET /api/v1/endpoints/zdr": true, "GET /api/v1/providers": true, "GET /api/v1/embeddings/models": true}
	ops := c.operations()
	if len(ops) < 41 {
		t.Errorf("%d operations documented, want at least 41", len(ops))
	}
	ids := map[string]string{}
	for name, op := range ops {
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", name)
		} else if other, dup := ids[op.OperationID]; dup {
			t.Errorf("%s: operationId %q also used by %s", name, op.OperationID, other)
		}
		ids[op.OperationID] = name
		var success []string
		for code := range op.Responses.Map() {
			if strings.HasPrefix(code, "2") {
				success = append(success, code)
			}
		}
		if len(success) != 1 {
			t.Errorf("%s: success responses %v, want exactly one", name, success)
		}
		if creates[name] && op.Responses.Status(http.StatusCreated) == nil {
			t.Errorf("%s: does not document 201", name)
		}
		if !creates[name] && strings.HasPrefix(name, "POST /api/v1/") && name != "POST /api/v1/organization/members" &&
			op.Responses.Status(http.StatusOK) == nil {
			t.Errorf("%s: does not document 200", name)
		}
		if op.Responses.Status(http.StatusInternalServerError) == nil && strings.Contains(name, "/api/v1/") {
			t.Errorf("%s: does not document 500", name)
		}
		path := strings.SplitN(name, " ", 2)[1]
		if !strings.HasPrefix(path, "/api/v1/") || public[name] {
			if op.Security == nil || len(*op.Security) != 0 {
				t.Errorf("%s: must be public (security: [])", name)
			}
			continue
		}
		for _, code := range []int{http.StatusUnauthorized, http.StatusTooManyRequests} {
			if op.Responses.Status(code) == nil {
				t.Errorf("%s: does not document %d", name, code)
			}
		}
		if op.RequestBody != nil {
			for _, code := range []int{http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType} {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s: has a body but does not document %d", name, code)
				}
			}
		}
	}
	for _, want := range []string{
		"GET /api/v1/key getCurrentKey", "GET /api/v1/keys list", "POST /api/v1/keys createKeys",
		"GET /api/v1/keys/{hash} getKey", "PATCH /api/v1/keys/{hash} updateKeys", "DELETE /api/v1/keys/{hash} deleteKeys",
		"POST /api/v1/auth/keys/code createAuthKeysCode", "POST /api/v1/auth/keys exchangeAuthCodeForAPIKey",
		"GET /api/v1/guardrails/assignments/keys listKeyAssignments",
		"GET /api/v1/organization/members listOrganizationMembers",
		"GET /healthz healthz", "GET /readyz readyz", "GET /metrics metrics", "GET /api/v1/openapi.json getOpenAPIDocument",
	} {
		f := strings.Fields(want)
		if op := ops[f[0]+" "+f[1]]; op == nil || op.OperationID != f[2] {
			t.Errorf("%s %s: want operationId %s", f[0], f[1], f[2])
		}
	}
	// The assignment listings must not be captured by /guardrails/{id}.
	route, _, err := c.router.FindRoute(httptest.NewRequest(http.MethodGet, "/api/v1/guardrails/assignments/members", nil))
	if err != nil || route.Operation.OperationID != "listMemberAssignments" {
		t.Errorf("GET /api/v1/guardrails/assignments/members routes to %v (%v)", route, err)
	}
}

// optionalResponseFields are the only response properties that may be absent;
// every other property of a response object is required, because the server
// always emits every field (null when absent).
var optionalResponseFields = map[string]bool{
	"Error.error.metadata":            true,
	"ContentFilter.label":             true,
	"ContentFilterBuiltin.scan_scope": true,
	"FilterCondition.value":           true,
	// Gatehouse's own, outside the client's destination schema: present
	// only on a destination whose secrets the server's key does not open,
	// so that every other answer is exactly the client's shape.
	"ObservabilityDestination.secrets_unreadable": true,
	// The client's model schema does not allow null for these: they are
	// absent when the providers file says nothing.
	"Model.reasoning":                    true,
	"Model.architecture.tokenizer":       true,
	"ModelPricing.input_cache_read":      true,
	"ModelPricing.input_cache_write":     true,
	"ModelReasoning.default_enabled":     true,
	"ModelReasoning.default_effort":      true,
	"ModelReasoning.supported_efforts":   true,
	"ModelReasoning.supports_max_tokens": true,
	"ActivityItem.workspace_id":          true, // with group_by=workspace only
	"ProviderResponse.id":                true, // the client's schema takes a string or nothing, not null
}

// TestOpenAPIResponseSchemasAreStrict keeps the document strict: every object
// reachable from a response lists all its properties as required and forbids
// others, so that a field the server adds, drops or renames fails a test.
func TestOpenAPIResponseSchemasAreStrict(t *testing.T) {
	c := newOpenAPIChecker(t)
	seen := map[*openapi3.Schema]bool{}
	var walk func(where, name string, ref *openapi3.SchemaRef)
	walk = func(where, name string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil {
			return
		}
		if ref.Ref != "" {
			name = strings.TrimPrefix(ref.Ref, "#/components/schemas/")
			where = name
		}
		s := ref.Value
		if seen[s] {
			return
		}
		seen[s] = true
		// Open maps (config values, headers, error metadata) are exempt; the per-type
		// destination configurations have optional keys, listed as such.
		openMap := name == "OpenAPIDocument" || s.AdditionalProperties.Schema != nil || where == "Error.error.metadata"
		optionalKeys := strings.HasSuffix(name, "DestinationConfig")
		if s.Type.Is("object") && !openMap {
			if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
				t.Errorf("%s: object without additionalProperties: false", where)
			}
			for prop := range s.Properties {
				if !optionalKeys && !slices.Contains(s.Required, prop) && !optionalResponseFields[where+"."+prop] {
					t.Errorf("%s.%s: response property not required", where, prop)
				}
			}
		}
		for prop, p := range s.Properties {
			walk(where+"."+prop, name, p)
		}
		walk(where+"[]", name, s.Items)
		walk(where, name, s.AdditionalProperties.Schema)
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, sub := range list {
				walk(where, name, sub)
			}
		}
		walk(where, name, s.Then)
		walk(where, name, s.Else)
	}
	for name, op := range c.operations() {
		for code, resp := range op.Responses.Map() {
			for mt, media := range resp.Value.Content {
				if mt == "application/json" {
					walk(name+" "+code, "", media.Schema)
				}
			}
		}
	}
}
