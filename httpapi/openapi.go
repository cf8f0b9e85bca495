package httpapi

import (
	_ "embed"
	"net/http"
)

//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 document of the API, as served at
// GET /api/v1/openapi.json.
func OpenAPIDocument() []byte { return openAPIDocument }

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDocument)
}
