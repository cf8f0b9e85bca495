package seed

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// table is the rows of one table: row fills dst with the values of the
// i-th candidate row (in cols order) and reports whether it is a row at all.
type table struct {
	name string
	cols []string
	n    int
	row  func(i int, dst []any) bool
	// deferIndexes drops the table's indexes (but those of its
	// constraints) before the rows are written and builds them again
	// after, from their own definitions: faster than keeping them up to
	// date row by row for millions of rows.
	deferIndexes bool
}

// plan derives every seeded row from its index, so that nothing of a
// million rows has to be held in memory.
type plan struct {
	opts      Options
	secret    [32]byte
	orgID     string
	defaultWS string
	mgmtKey   string
	base      int64 // created_at of row 0, Unix ms
	now       int64 // when the seeding started, Unix ms: the ledger ends here
	// The first regular keys of the default workspace have no limit, no
	// creator and no guardrail: their plaintexts are for benchmarks that
	// authenticate or call models. The next assignPool keys of the default
	// workspace are left unassigned for the bulk-assign benchmark.
	regular, assignPool int
	// keysDefault and guardrailsDefault are how many of each sit in the
	// default workspace; the rest spread over the others.
	keysDefault, guardrailsDefault int
}

// regularKeys is how many keys the manifest gives the plaintext of.
const regularKeys = 10

func newPlan(o Options, org *Organization, now time.Time) *plan {
	if o.AssignEvery == 0 {
		o.AssignEvery = 10
	}
	p := &plan{opts: o, orgID: org.ID, defaultWS: org.DefaultWorkspaceID, mgmtKey: org.ManagementKey,
		base: now.Add(-2 * time.Hour).UnixMilli(), now: now.UnixMilli()}
	_, _ = rand.Read(p.secret[:])
	p.keysDefault, p.guardrailsDefault = defaultShare(o.Keys, o.Workspaces, 10_000), defaultShare(o.Guardrails, o.Workspaces, 1_000)
	p.regular = min(regularKeys, p.keysDefault)
	p.assignPool = min(p.keysDefault-p.regular, 10_000)
	return p
}

// defaultShare is how many of n rows go to the default workspace: a tenth,
// at least floor (so that its lists and bulk operations have room), all of
// them when it is the only workspace.
func defaultShare(n, workspaces, floor int) int {
	if workspaces == 1 {
		return n
	}
	return min(n, max(n/10, floor))
}

// sum returns a digest unique to (kind, i) and secret to this run.
func (p *plan) sum(kind byte, i int) [32]byte {
	var buf [41]byte
	copy(buf[:32], p.secret[:])
	buf[32] = kind
	binary.BigEndian.PutUint64(buf[33:], uint64(i))
	return sha256.Sum256(buf[:])
}

// uuid returns a version-4-shaped UUID for (kind, i).
func (p *plan) uuid(kind byte, i int) string {
	s := p.sum(kind, i)
	s[6] = s[6]&0x0f | 0x40
	s[8] = s[8]&0x3f | 0x80
	return uuid.UUID(s[:16]).String()
}

var userIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// memberID has the shape of gatehouse.NewUserID.
func (p *plan) memberID(i int) string {
	s := p.sum('u', i)
	return "user_" + userIDEncoding.EncodeToString(s[:12])
}

// keyPlaintext has the shape of gatehouse.NewKeySecret.
func (p *plan) keyPlaintext(i int) string {
	s := p.sum('k', i)
	return gatehouse.KeyPrefix + hex.EncodeToString(s[:])
}

func (p *plan) keyHash(i int) string { return gatehouse.HashKey(p.keyPlaintext(i)) }

// workspaceID returns the id of workspace j; 0 is the default one.
func (p *plan) workspaceID(j int) string {
	if j == 0 {
		return p.defaultWS
	}
	return p.uuid('w', j)
}

func (p *plan) guardrailID(g int) string { return p.uuid('g', g) }

// spread returns the workspace of the i-th of n rows of which the first
// inDefault sit in the default workspace.
func (p *plan) spread(i, inDefault int) int {
	if i < inDefault || p.opts.Workspaces == 1 {
		return 0
	}
	return 1 + (i-inDefault)%(p.opts.Workspaces-1)
}

// firstGuardrailOf returns the first guardrail of workspace j, or -1.
func (p *plan) firstGuardrailOf(j int) int {
	if j == 0 {
		return min(0, p.guardrailsDefault-1)
	}
	if g := p.guardrailsDefault + j - 1; g < p.opts.Guardrails {
		return g
	}
	return -1
}

func (p *plan) tables() []table {
	tables := []table{p.workspaceTable(), p.memberTable(), p.workspaceMemberTable(), p.guardrailTable(),
		p.keyTable(), p.keyAssignmentTable(), p.memberAssignmentTable(), p.presetTable(), p.presetVersionTable()}
	if p.opts.Generations > 0 {
		tables = append(tables, p.generationTable())
	}
	if p.opts.Audit {
		tables = append(tables, p.auditTable())
	}
	return tables
}

func (p *plan) workspaceTable() table {
	return table{name: "workspaces", n: p.opts.Workspaces - 1,
		cols: []string{"id", "organization_id", "name", "slug", "description", "io_logging_sampling_rate",
			"is_data_discount_logging_enabled", "is_observability_broadcast_enabled", "is_observability_io_logging_enabled",
			"include_byok_in_budgets", "is_default", "default_guardrail_id", "created_at"},
		row: func(i int, d []any) bool {
			j := i + 1
			id := p.workspaceID(j)
			var desc any
			if j%2 == 0 {
				desc = fmt.Sprintf("Benchmark workspace number %d", j)
			}
			fill(d, id, p.orgID, fmt.Sprintf("Bench workspace %d", j), fmt.Sprintf("bench-%d", j), desc, 1.0,
				j%3 == 0, false, false, false, false, gatehouse.DefaultGuardrailID(id), p.base+int64(j))
			return true
		}}
}

func (p *plan) memberTable() table {
	return table{name: "members", n: p.opts.Members,
		cols: []string{"organization_id", "id", "email", "first_name", "last_name", "role", "created_at"},
		row: func(i int, d []any) bool {
			role := gatehouse.RoleMember
			if i%100 == 0 {
				role = gatehouse.RoleAdmin
			}
			fill(d, p.orgID, p.memberID(i), fmt.Sprintf("bench-member-%d@example.com", i), "Member", fmt.Sprint(i), role, p.base+int64(i))
			return true
		}}
}

func (p *plan) workspaceMemberTable() table {
	per, others := p.opts.WorkspaceMembers, p.opts.Workspaces-1
	return table{name: "workspace_members", n: per * others,
		cols: []string{"id", "organization_id", "workspace_id", "user_id", "created_at"},
		row: func(i int, d []any) bool {
			j, t := 1+i/per, i%per
			fill(d, p.uuid('m', i), p.orgID, p.workspaceID(j), p.memberID(p.workspaceMember(j, t)), p.base+int64(t))
			return true
		}}
}

// workspaceMember returns the member index of the t-th member of workspace j.
func (p *plan) workspaceMember(j, t int) int {
	return ((j-1)*p.opts.WorkspaceMembers + t) % p.opts.Members
}

func (p *plan) guardrailTable() table {
	return table{name: "guardrails", n: p.opts.Guardrails,
		cols: []string{"id", "organization_id", "workspace_id", "name", "description", "allowed_providers",
			"ignored_models", "limit_nanos", "reset_interval", "include_byok_in_budgets", "created_at", "updated_at"},
		row: func(g int, d []any) bool {
			var desc, providers, ignored, limit, reset any
			switch g % 4 {
			case 0:
				providers = `["openai","anthropic"]`
			case 1:
				limit, reset = int64(50*gatehouse.NanosPerUSD), "monthly"
			case 2:
				ignored, desc = `["openai/o1-pro"]`, "No frontier models"
			}
			at := p.base + int64(g)
			fill(d, p.guardrailID(g), p.orgID, p.workspaceID(p.spread(g, p.guardrailsDefault)), fmt.Sprintf("bench-guardrail-%d", g),
				desc, providers, ignored, limit, reset, false, at, at)
			return true
		}}
}

func (p *plan) keyTable() table {
	return table{name: "api_keys", n: p.opts.Keys,
		cols: []string{"hash", "organization_id", "workspace_id", "management", "name", "disabled", "limit_nanos",
			"limit_reset", "include_byok_in_limit", "creator_user_id", "created_at"},
		row: func(k int, d []any) bool {
			j := p.spread(k, p.keysDefault)
			var limit, reset, creator any
			if k >= p.regular && k%3 == 0 {
				limit, reset = int64(10*gatehouse.NanosPerUSD), "monthly"
			}
			// Creators only in the default workspace, so that members can
			// be removed from the others.
			if j == 0 && k >= p.regular && k%5 == 0 && p.opts.Members > 0 {
				creator = p.memberID(k % p.opts.Members)
			}
			fill(d, p.keyHash(k), p.orgID, p.workspaceID(j), false, fmt.Sprintf("bench-key-%d", k), false,
				limit, reset, false, creator, p.base+int64(k))
			return true
		}}
}

// keyAssignmentTable assigns every AssignEvery-th key (outside the
// reserved ones) to the first guardrail of its workspace.
func (p *plan) keyAssignmentTable() table {
	return table{name: "key_assignments", n: p.opts.Keys,
		cols: []string{"id", "organization_id", "guardrail_id", "key_hash", "created_at"},
		row: func(k int, d []any) bool {
			if k%p.opts.AssignEvery != 0 || k < p.regular+p.assignPool {
				return false
			}
			g := p.firstGuardrailOf(p.spread(k, p.keysDefault))
			if g < 0 {
				return false
			}
			fill(d, p.uuid('a', k), p.orgID, p.guardrailID(g), p.keyHash(k), p.base+int64(k))
			return true
		}}
}

// memberAssignmentTable assigns every AssignEvery-th member to a
// guardrail of the default workspace, in turn.
func (p *plan) memberAssignmentTable() table {
	return table{name: "member_assignments", n: p.opts.Members,
		cols: []string{"id", "organization_id", "guardrail_id", "user_id", "created_at"},
		row: func(i int, d []any) bool {
			if i%p.opts.AssignEvery != 0 || p.guardrailsDefault == 0 {
				return false
			}
			fill(d, p.uuid('b', i), p.orgID, p.guardrailID((i/p.opts.AssignEvery)%p.guardrailsDefault), p.memberID(i), p.base+int64(i))
			return true
		}}
}

// presetTable makes the default workspace's presets, each at its first
// version (presetVersionTable), the later ones updated later.
func (p *plan) presetTable() table {
	return table{name: "presets", n: p.opts.Presets,
		cols: []string{"id", "organization_id", "workspace_id", "slug", "name", "status", "latest_version", "latest_version_id",
			"created_at", "updated_at"},
		row: func(i int, d []any) bool {
			fill(d, p.uuid('p', i), p.orgID, p.defaultWS, fmt.Sprintf("bench-preset-%d", i), fmt.Sprintf("Bench preset %d", i),
				"active", 1, p.uuid('v', i), p.base+int64(i), p.base+int64(i))
			return true
		}}
}

func (p *plan) presetVersionTable() table {
	return table{name: "preset_versions", n: p.opts.Presets,
		cols: []string{"id", "preset_id", "version", "config", "creator_id", "created_at"},
		row: func(i int, d []any) bool {
			fill(d, p.uuid('v', i), p.uuid('p', i), 1, `{"model":"openai/gpt-4o-mini"}`, gatehouse.HashKey(p.mgmtKey), p.base+int64(i))
			return true
		}}
}

func fill(dst []any, vals ...any) { copy(dst, vals) }
