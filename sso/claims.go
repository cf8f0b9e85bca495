package sso

import (
	"slices"
	"strings"

	"gatehouse"
)

// claim returns the value of a claim: by its name, or, for a name with
// dots that is not a claim itself, by the path it spells through nested
// objects (Keycloak's realm_access.roles).
func claim(claims map[string]any, name string) (any, bool) {
	if name == "" {
		return nil, false
	}
	if v, ok := claims[name]; ok {
		return v, true
	}
	var v any = claims
	for part := range strings.SplitSeq(name, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// readClaims reads what a provider says of someone from the claims it is
// configured with.
func readClaims(p *gatehouse.SSOProvider, subject string, claims map[string]any) (gatehouse.SSOSignIn, error) {
	in := gatehouse.SSOSignIn{ProviderID: p.ID, Subject: subject, GroupsGiven: p.GroupsClaim != ""}
	in.Email, _ = stringClaim(claims, p.EmailClaim)
	in.EmailVerified = boolClaim(claims, p.EmailVerifiedClaim)
	in.Name, _ = stringClaim(claims, p.NameClaim)
	if !in.GroupsGiven {
		return in, nil
	}
	if names, _ := claims["_claim_names"].(map[string]any); names[p.GroupsClaim] != nil {
		// Entra ID's "overage": more groups than a token holds, left
		// out. Going on would take away what the missing groups give.
		return in, refused(p, "the provider left the groups out of the ID token (too many groups): have it send only the groups assigned to the application", nil)
	}
	v, _ := claim(claims, p.GroupsClaim)
	groups, ok := groupValues(v)
	if !ok {
		return in, refused(p, "the groups claim ("+p.GroupsClaim+") is neither a list of names nor an object of them", nil)
	}
	in.Groups = groups
	return in, nil
}

// groupValues reads a groups claim: a list of strings (Okta, Entra ID,
// Keycloak, Dex, Google through a mapper), a single string, or an object
// whose keys are the names (Zitadel's project roles claim). No claim is no
// groups.
func groupValues(v any) ([]string, bool) {
	switch v := v.(type) {
	case nil:
		return []string{}, true
	case string:
		return []string{v}, true
	case []any:
		out := make([]string, 0, len(v))
		for _, g := range v {
			s, ok := g.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case map[string]any:
		out := make([]string, 0, len(v))
		for k := range v {
			out = append(out, k)
		}
		slices.Sort(out)
		return out, true
	}
	return nil, false
}

func stringClaim(claims map[string]any, name string) (string, bool) {
	v, _ := claim(claims, name)
	s, ok := v.(string)
	return strings.TrimSpace(s), ok
}

// boolClaim reads a claim that says yes or no: a boolean, or the strings
// "true" and "false" that some providers send.
func boolClaim(claims map[string]any, name string) bool {
	v, _ := claim(claims, name)
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}
