package scim

import (
	"strings"

	"gatehouse"

	"github.com/elimity-com/scim"
	"github.com/elimity-com/scim/filter"
	parser "github.com/scim2/filter-parser/v2"
)

// Filters. What providers send is mostly one exact match of a kept
// attribute (userName eq "…", externalId eq "…", displayName eq "…"),
// which the store answers through its indexes. Anything else is checked by
// the library (filter.Validator.PassesFilter) against the organization's
// resources, read a page at a time and narrowed by whatever exact matches
// the filter requires.

// narrow fills in fields (by lowercase attribute name) from the equality
// matches that the filter requires, and reports whether that is the whole
// filter (no filter at all is).
func narrow(v *filter.Validator, fields map[string]*string) bool {
	if v == nil {
		return true
	}
	return narrowExpression(v.GetFilter(), fields)
}

func narrowExpression(e parser.Expression, fields map[string]*string) bool {
	switch e := e.(type) {
	case *parser.AttributeExpression:
		value, isString := e.CompareValue.(string)
		dst, kept := fields[strings.ToLower(e.AttributePath.AttributeName)]
		if e.Operator != parser.EQ || !isString || !kept || e.AttributePath.SubAttribute != nil || !coreURI(e.AttributePath.URI()) {
			return false
		}
		if *dst != "" && *dst != value {
			*dst = "\x00" // two values: nothing matches, which the store answers
		} else {
			*dst = value
		}
		return true
	case *parser.LogicalExpression:
		if e.Operator != parser.AND {
			return false
		}
		left := narrowExpression(e.Left, fields)
		return narrowExpression(e.Right, fields) && left
	}
	return false
}

// coreURI reports whether a filter's attribute is of a core schema.
func coreURI(uri string) bool {
	return uri == "" || strings.HasPrefix(uri, "urn:ietf:params:scim:schemas:core:2.0:")
}

// filterable is a resource as the library's filters read it: its
// attributes with its id and externalId.
func filterable(r scim.Resource) map[string]any {
	m := make(map[string]any, len(r.Attributes)+2)
	for k, v := range r.Attributes {
		m[k] = v
	}
	m["id"] = r.ID
	if r.ExternalID.Present() {
		m["externalId"] = r.ExternalID.Value()
	}
	return m
}

// eachPage calls read with the start index of each page of MaxPageSize,
// until a page comes back short.
func eachPage(read func(start int) (int, error)) error {
	for start := 1; ; start += gatehouse.MaxPageSize {
		n, err := read(start)
		if err != nil || n < gatehouse.MaxPageSize {
			return err
		}
	}
}

// window returns the page of resources from startIndex (1-based), count
// of them, with the total.
func window(all []scim.Resource, startIndex, count int) scim.Page {
	page := scim.Page{TotalResults: len(all), Resources: []scim.Resource{}}
	from := min(max(startIndex, 1)-1, len(all))
	to := min(from+max(count, 0), len(all))
	page.Resources = append(page.Resources, all[from:to]...)
	return page
}
