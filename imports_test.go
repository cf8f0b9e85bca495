package gatehouse_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestDomainImportsNoAdapter: the domain (the metering sequence included)
// stays free of HTTP, SQL, metrics and every adapter package, so that each
// front end and engine can call it (DESIGN.md: data flows one way).
func TestDomainImportsNoAdapter(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports read")
	}
	for _, imp := range pkg.Imports {
		if imp == "net/http" || imp == "database/sql" || strings.HasPrefix(imp, "gatehouse/") ||
			strings.Contains(imp, "prometheus") || strings.Contains(imp, "pgx") || strings.Contains(imp, "sqlite") {
			t.Errorf("package gatehouse imports %s", imp)
		}
	}
}
