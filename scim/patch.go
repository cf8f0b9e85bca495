package scim

import (
	"slices"
	"strings"

	"gatehouse"

	"github.com/elimity-com/scim"
	"github.com/elimity-com/scim/filter"
	"github.com/elimity-com/scim/schema"
	parser "github.com/scim2/filter-parser/v2"
)

// PATCH. The library parses and validates the operations (their paths
// against the schemas, their values against the attributes' types); here
// they are applied to the attributes Gatehouse keeps, and the others are
// accepted and ignored. Two habits of Entra ID are taken as it means them:
// "active": "False" (a string; the library reads it as a boolean, see
// init), and a "remove" of "members" that lists the members to remove in
// its value (rather than a filter in its path), which removes those only.

// target is where an operation applies: the attribute, its
// sub-attribute, and the filter on a multi-valued one.
type target struct {
	attr, sub string
	where     parser.Expression
}

// targetOf reads an operation's path; ok is false for an attribute of an
// extension schema (not kept).
func targetOf(p *parser.Path) (target, bool) {
	if uri := p.AttributePath.URI(); !coreURI(uri) {
		return target{}, false
	}
	sub := p.AttributePath.SubAttributeName()
	if sub == "" {
		sub = p.SubAttributeName()
	}
	return target{attr: strings.ToLower(p.AttributePath.AttributeName), sub: strings.ToLower(sub), where: p.ValueExpression}, true
}

// eachTarget calls apply with the target and value of an operation, or,
// for an operation without a path, of each attribute of its value.
func eachTarget(op scim.PatchOperation, apply func(t target, value any) error) error {
	if op.Path != nil {
		if t, ok := targetOf(op.Path); ok {
			return apply(t, op.Value)
		}
		return nil
	}
	values, _ := op.Value.(map[string]any)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "urn:") && !strings.HasPrefix(k, "urn:ietf:params:scim:schemas:core:2.0:") {
			continue // an extension's attributes: not kept
		}
		p, err := parser.ParsePath([]byte(k))
		if err != nil {
			return invalid("the attribute %q of the operation's value is not a path", k)
		}
		if t, ok := targetOf(&p); ok {
			if err := apply(t, values[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// invalid refuses an operation (SCIM's 400 invalidValue).
func invalid(format string, args ...any) error {
	return gatehouse.Errorf(gatehouse.EINVALID, format, args...)
}

// patchUser applies one operation to a user.
func patchUser(w *gatehouse.SCIMUserWrite, op scim.PatchOperation) error {
	remove := op.Op == scim.PatchOperationRemove
	return eachTarget(op, func(t target, value any) error {
		s, _ := value.(string)
		switch {
		case t.attr == "active" && !remove:
			b, ok := value.(bool)
			if !ok {
				return invalid("active must be true or false")
			}
			w.Active = b
		case t.attr == "username":
			w.UserName = s // removing it is refused by the write's validation
		case t.attr == "externalid":
			w.ExternalID = optionalUnless(remove, s)
		case t.attr == "displayname":
			w.DisplayName = optionalUnless(remove, s)
		case t.attr == "name" && (t.sub == "givenname" || t.sub == "familyname"):
			setName(w, t.sub, optionalUnless(remove, s))
		case t.attr == "name" && t.sub == "":
			m, _ := value.(map[string]any)
			if remove || op.Op == scim.PatchOperationReplace {
				w.GivenName, w.FamilyName = nil, nil
			}
			for _, sub := range []string{"givenName", "familyName"} {
				if v := optionalString(m[sub]); v != nil {
					setName(w, strings.ToLower(sub), v)
				}
			}
		case t.attr == "emails" && remove:
			w.Email = "" // a user without an email is refused by the write's validation
		case t.attr == "emails" && t.sub == "value":
			w.Email = s
		case t.attr == "emails" && t.sub == "":
			if v, _ := value.(map[string]any); v != nil {
				value = []any{v} // one element, chosen by the path's filter
			}
			if e := primaryEmail(value); e != "" {
				w.Email = e
			}
		}
		return nil
	})
}

func setName(w *gatehouse.SCIMUserWrite, sub string, v *string) {
	if sub == "givenname" {
		w.GivenName = v
	} else {
		w.FamilyName = v
	}
}

// optionalUnless is nil for a removal or an empty value, else the value.
func optionalUnless(remove bool, s string) *string {
	if remove {
		return nil
	}
	return optionalString(s)
}

// membersAttribute is the members attribute of the group schema, whose
// sub-attributes the filters of a members path are read against.
var membersAttribute = func() schema.CoreAttribute {
	for _, a := range schema.CoreGroupSchema().Attributes {
		if a.Name() == "members" {
			return a
		}
	}
	panic("scim: the group schema has no members")
}()

// patchGroup applies one operation to a group.
func patchGroup(w *gatehouse.SCIMGroupWrite, op scim.PatchOperation) error {
	remove := op.Op == scim.PatchOperationRemove
	return eachTarget(op, func(t target, value any) error {
		s, _ := value.(string)
		switch {
		case t.attr == "displayname":
			w.DisplayName = s // removing it is refused by the write's validation
		case t.attr == "externalid":
			w.ExternalID = optionalUnless(remove, s)
		case t.attr == "members" && !remove:
			ids := memberIDs(value)
			if op.Op == scim.PatchOperationReplace && t.where == nil {
				w.MemberIDs = ids
			} else {
				w.MemberIDs = append(w.MemberIDs, ids...)
			}
		case t.attr == "members" && t.where != nil:
			match := filter.NewFilterValidator(t.where, schema.Schema{Attributes: filter.MultiValuedFilterAttributes(membersAttribute)})
			w.MemberIDs = slices.DeleteFunc(w.MemberIDs, func(id string) bool { return match.PassesFilter(map[string]any{"value": id}) == nil })
		case t.attr == "members" && value != nil:
			gone := memberIDs(value) // Entra ID: the members to remove, in the value
			w.MemberIDs = slices.DeleteFunc(w.MemberIDs, func(id string) bool { return slices.Contains(gone, id) })
		case t.attr == "members":
			w.MemberIDs = nil
		}
		return nil
	})
}

// memberIDs reads the ids of a members value: a list of {"value": id}.
func memberIDs(v any) []string {
	list, _ := v.([]any)
	if m, ok := v.(map[string]any); ok {
		list = []any{m}
	}
	ids := []string{}
	for _, e := range list {
		m, _ := e.(map[string]any)
		if id, _ := m["value"].(string); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}
