package seed

import (
	"encoding/binary"
	"encoding/json"
	mrand "math/rand/v2"
	"os"
)

// Manifest lists ids for the benchmarks to request (bench-seed --manifest).
type Manifest struct {
	OrganizationID     string `json:"organization_id"`
	ManagementKey      string `json:"management_key"`
	DefaultWorkspaceID string `json:"default_workspace_id"`
	// RegularKeys are plaintexts of keys of the default workspace with no
	// limit, creator or guardrail.
	RegularKeys []string `json:"regular_keys"`
	// KeyHashes, GuardrailIDs and MemberIDs are random samples.
	KeyHashes    []string `json:"key_hashes"`
	GuardrailIDs []string `json:"guardrail_ids"`
	MemberIDs    []string `json:"member_ids"`
	// AssignGuardrailIDs are guardrails of the default workspace without
	// rules, and AssignKeyHashes unassigned keys of that workspace.
	AssignGuardrailIDs []string `json:"assign_guardrail_ids"`
	AssignKeyHashes    []string `json:"assign_key_hashes"`
	// Workspaces are the workspaces other than the default, with their
	// members.
	Workspaces []Workspace    `json:"workspaces"`
	Counts     map[string]int `json:"counts"`
	// HotKeyHashes are the keys that made half of the seeded calls, when
	// there are any (each about one fortieth).
	HotKeyHashes []string `json:"hot_key_hashes,omitempty"`
}

// Workspace is a seeded workspace with its members.
type Workspace struct {
	ID      string   `json:"id"`
	UserIDs []string `json:"user_ids"`
}

func (p *plan) manifest() *Manifest {
	o := p.opts
	rnd := mrand.New(mrand.NewPCG(binary.BigEndian.Uint64(p.secret[:8]), 1))
	m := &Manifest{OrganizationID: p.orgID, ManagementKey: p.mgmtKey, DefaultWorkspaceID: p.defaultWS,
		Counts: map[string]int{"keys": o.Keys, "guardrails": o.Guardrails, "members": o.Members, "workspaces": o.Workspaces,
			"workspace_members": o.WorkspaceMembers, "generations": o.Generations, "generation_days": o.GenerationDays}}
	if o.Generations > 0 {
		for k := range min(hotKeys, o.Keys) {
			m.HotKeyHashes = append(m.HotKeyHashes, p.keyHash(k))
		}
	}
	for k := range p.regular {
		m.RegularKeys = append(m.RegularKeys, p.keyPlaintext(k))
	}
	m.KeyHashes = sample(rnd, o.Keys, o.Samples, p.keyHash)
	m.GuardrailIDs = sample(rnd, o.Guardrails, o.Samples, p.guardrailID)
	m.MemberIDs = sample(rnd, o.Members, o.Samples, p.memberID)
	for g := 3; g < p.guardrailsDefault && len(m.AssignGuardrailIDs) < 2; g += 4 { // g%4 == 3: no rules
		m.AssignGuardrailIDs = append(m.AssignGuardrailIDs, p.guardrailID(g))
	}
	for k := p.regular; k < p.regular+p.assignPool; k++ {
		m.AssignKeyHashes = append(m.AssignKeyHashes, p.keyHash(k))
	}
	for j := 1; j < o.Workspaces; j++ {
		w := Workspace{ID: p.workspaceID(j), UserIDs: []string{}}
		for t := range o.WorkspaceMembers {
			w.UserIDs = append(w.UserIDs, p.memberID(p.workspaceMember(j, t)))
		}
		m.Workspaces = append(m.Workspaces, w)
	}
	return m
}

// sample returns up to k distinct ids out of n, at random.
func sample(rnd *mrand.Rand, n, k int, id func(int) string) []string {
	out := []string{}
	if k >= n {
		for i := range n {
			out = append(out, id(i))
		}
		return out
	}
	seen := map[int]bool{}
	for len(out) < k {
		if i := rnd.IntN(n); !seen[i] {
			seen[i] = true
			out = append(out, id(i))
		}
	}
	return out
}

// WriteFile writes the manifest as JSON, readable by its owner only: it
// holds key plaintexts.
func (m *Manifest) WriteFile(path string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
