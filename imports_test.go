package gatehouse_test

import (
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
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

// TestJSONOnlyInWireForms: the domain's files decode and encode JSON only
// where they define a resource's wire form (its stored or sent shape);
// request shapes belong to provider/, meter/ and preset/.
func TestJSONOnlyInWireForms(t *testing.T) {
	wireForms := map[string]bool{
		"generation.go": true, // a generation's stored content
		"money.go":      true, // amounts in USD, exactly
		"patch.go":      true, // absent, null or a value in a PATCH
		"period.go":     true, // reset intervals
		"preset.go":     true, // a preset version's stored configuration
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"encoding/json"` && !wireForms[name] {
				t.Errorf("%s imports encoding/json, but defines no resource's wire form", name)
			}
		}
	}
}

// TestModelPathImportsNoAdapter: the model path's packages (provider,
// meter, preset) are domain too: no HTTP server side, SQL, engine or
// front end, so that every front end and engine can call them.
func TestModelPathImportsNoAdapter(t *testing.T) {
	for _, dir := range []string{"provider", "meter", "preset"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			switch imp {
			case "net/http", "database/sql", "gatehouse/httpapi", "gatehouse/sqlstore", "gatehouse/sqlite",
				"gatehouse/postgres", "gatehouse/console", "gatehouse/gateway", "gatehouse/observe":
				t.Errorf("package %s imports %s", dir, imp)
			}
		}
	}
}
