// Row mapping: the column lists (identical in both schemas), the scanners
// and the argument builders. Timestamps are Unix milliseconds; money is
// integer nano-USD; lists and documents are JSON text.
//
// Scanners scan plain columns straight into the fields (a nullable column
// into a pointer field: database/sql and pgx both leave it nil for NULL,
// and both turn a BOOLEAN, an integer in SQLite, into a bool); the other
// columns go through the adapters below, which both honour as sql.Scanner
// and driver.Valuer.

package sqlstore

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gatehouse"
)

// ms returns the column value of a time: Unix milliseconds, the unit of
// every timestamp column, and NULL for a nil *time.Time.
func ms[T time.Time | *time.Time](t T) any {
	switch t := any(t).(type) {
	case time.Time:
		return t.UnixMilli()
	case *time.Time:
		if t != nil {
			return t.UnixMilli()
		}
	}
	return nil
}

// msTime scans a timestamp column into a time.Time (in UTC), or into a
// *time.Time that NULL leaves nil.
func msTime[T time.Time | *time.Time](p *T) sql.Scanner { return msCol[T]{p} }

type msCol[T time.Time | *time.Time] struct{ p *T }

func (c msCol[T]) Scan(src any) error {
	var v sql.NullInt64
	if err := v.Scan(src); err != nil {
		return err
	}
	t := time.UnixMilli(v.Int64).UTC()
	switch p := any(c.p).(type) {
	case *time.Time:
		if !v.Valid {
			return errors.New("NULL timestamp")
		}
		*p = t
	case **time.Time:
		*p = nil
		if v.Valid {
			*p = &t
		}
	}
	return nil
}

// nullString scans a nullable text column into a string type that NULL
// leaves "": a key's workspace, an interval's NoReset. nullIfEmpty is its
// argument.
func nullString[T ~string](p *T) sql.Scanner { return textCol[T]{p} }

type textCol[T ~string] struct{ p *T }

func (c textCol[T]) Scan(src any) error {
	var v sql.NullString
	err := v.Scan(src)
	*c.p = T(v.String)
	return err
}

// nullMoney returns the column value of an optional amount.
func nullMoney(m *gatehouse.Money) any {
	if m == nil {
		return nil
	}
	return int64(*m)
}

// jsonCol is a JSON text column. Scanned, it decodes into v, a pointer, and
// NULL leaves v alone; as an argument, it is the JSON of v, or NULL when v
// is a nil slice, map or pointer.
type jsonCol struct{ v any }

func (c jsonCol) Scan(src any) error {
	var s sql.NullString
	if err := s.Scan(src); err != nil || !s.Valid {
		return err
	}
	return json.Unmarshal([]byte(s.String), c.v)
}

func (c jsonCol) Value() (driver.Value, error) {
	rv := reflect.ValueOf(c.v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
	}
	b, err := json.Marshal(c.v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// scanErr names the row a scan failed on by its id (scanned first, so
// known when a later column fails to decode); no row stays ErrNoRows.
func scanErr(kind, id string, err error) error {
	if err == nil || errors.Is(err, ErrNoRows) {
		return err
	}
	return fmt.Errorf("%s %s: %w", kind, id, err)
}

// found returns the row that scan reads from row; no row is the NotFound
// error of the kind and id looked for.
func found[T any](kind, id string, scan func(Scanner) (*T, error), row Row) (*T, error) {
	v, err := scan(row)
	if errors.Is(err, ErrNoRows) {
		return nil, gatehouse.NotFound(kind, id)
	}
	return v, err
}

// missing returns the values of want that are not in have, in want's order.
func missing(want, have []string) []string {
	out := []string{}
	for _, v := range want {
		if !slices.Contains(have, v) {
			out = append(out, v)
		}
	}
	return out
}

// keyColumns are the columns of api_keys, in scanKey order.
const keyColumns = `hash, organization_id, workspace_id, management, name, disabled, limit_nanos, limit_reset,
	include_byok_in_limit, creator_user_id, external_user, created_at, updated_at, expires_at, ` + counterColumns + `, parent_key_hash`

// scanKey scans a row of keyColumns.
//
// A key is read on every authenticated request, so it is scanned into
// plain typed values, not through the adapters: an adapter costs an
// allocation per column on both drivers, and pgx scans pointer fields by
// reflection (BenchmarkReads, FindKeyByHash: 87 allocations on PostgreSQL
// and 126 on SQLite through adapters, 60 and 113 like this; bench/run.sh
// get-key-by-hash on PostgreSQL lost 10% through them).
func scanKey(s Scanner) (*gatehouse.Key, error) {
	var k gatehouse.Key
	var workspace, reset, creator, external, parent sql.NullString
	var limit, updated, expires sql.NullInt64
	var created int64
	var u, b counterCols
	if err := s.Scan(&k.Hash, &k.OrganizationID, &workspace, &k.Management, &k.Name, &k.Disabled, &limit, &reset,
		&k.IncludeBYOKInLimit, &creator, &external, &created, &updated, &expires,
		&u[0], &u[1], &u[2], &u[3], &u[4], &u[5], &u[6], &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &parent); err != nil {
		return nil, err
	}
	k.WorkspaceID, k.LimitReset = workspace.String, gatehouse.Interval(reset.String)
	k.Limit = nullable(limit.Valid, gatehouse.Money(limit.Int64))
	k.CreatorUserID, k.ExternalUser = nullable(creator.Valid, creator.String), nullable(external.Valid, external.String)
	k.ParentKeyHash = nullable(parent.Valid, parent.String)
	k.CreatedAt, k.UpdatedAt, k.ExpiresAt = fromMS(created), nullTime(updated), nullTime(expires)
	k.Usage, k.BYOKUsage = u.counter(), b.counter()
	return &k, nil
}

// counterCols are the columns of a counter, in counterFields order.
type counterCols [7]int64

func (c counterCols) counter() gatehouse.Counter {
	return gatehouse.Counter{Total: gatehouse.Money(c[0]), Day: gatehouse.Money(c[1]), DayStart: fromMS(c[2]),
		Week: gatehouse.Money(c[3]), WeekStart: fromMS(c[4]), Month: gatehouse.Money(c[5]), MonthStart: fromMS(c[6])}
}

// counterDest returns where to scan the columns of a counter, in
// counterFields order.
func counterDest(c *gatehouse.Counter) []any {
	return []any{&c.Total, &c.Day, msTime(&c.DayStart), &c.Week, msTime(&c.WeekStart), &c.Month, msTime(&c.MonthStart)}
}

// fromMS returns the UTC time of Unix milliseconds.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// nullTime returns the time of a nullable timestamp column.
func nullTime(v sql.NullInt64) *time.Time { return nullable(v.Valid, fromMS(v.Int64)) }

// nullable returns &v when valid, else nil.
func nullable[T any](valid bool, v T) *T {
	if !valid {
		return nil
	}
	return &v
}

// counterArgs returns the column values of a counter, in column order.
func counterArgs(c gatehouse.Counter) []any {
	return []any{int64(c.Total), int64(c.Day), ms(c.DayStart), int64(c.Week), ms(c.WeekStart), int64(c.Month), ms(c.MonthStart)}
}

// workspaceColumns are the columns of workspaces, in scanWorkspace and
// workspaceArgs order.
const workspaceColumns = `id, organization_id, name, slug, description, default_text_model, default_image_model,
	default_provider_sort, disabled_server_tools, io_logging_api_key_ids, io_logging_sampling_rate,
	is_data_discount_logging_enabled, is_observability_broadcast_enabled, is_observability_io_logging_enabled,
	include_byok_in_budgets, is_default, created_by, created_at, updated_at`

// scanWorkspace scans a row of workspaceColumns.
func scanWorkspace(s Scanner) (*gatehouse.Workspace, error) {
	var w gatehouse.Workspace
	err := s.Scan(&w.ID, &w.OrganizationID, &w.Name, &w.Slug, &w.Description, &w.DefaultTextModel, &w.DefaultImageModel,
		&w.DefaultProviderSort, jsonCol{&w.DisabledServerTools}, jsonCol{&w.IOLoggingAPIKeyIDs}, &w.IOLoggingSamplingRate,
		&w.IsDataDiscountLoggingEnabled, &w.IsObservabilityBroadcastEnabled, &w.IsObservabilityIOLoggingEnabled,
		&w.IncludeBYOKInBudgets, &w.IsDefault, &w.CreatedBy, msTime(&w.CreatedAt), msTime(&w.UpdatedAt))
	if err != nil {
		return nil, scanErr("workspace", w.ID, err)
	}
	return &w, nil
}

// workspaceArgs returns the column values of w in workspaceColumns order.
func workspaceArgs(w *gatehouse.Workspace) []any {
	return []any{w.ID, w.OrganizationID, w.Name, w.Slug, w.Description, w.DefaultTextModel, w.DefaultImageModel,
		w.DefaultProviderSort, jsonCol{w.DisabledServerTools}, jsonCol{w.IOLoggingAPIKeyIDs}, w.IOLoggingSamplingRate,
		w.IsDataDiscountLoggingEnabled, w.IsObservabilityBroadcastEnabled, w.IsObservabilityIOLoggingEnabled,
		w.IncludeBYOKInBudgets, w.IsDefault, w.CreatedBy, ms(w.CreatedAt), ms(w.UpdatedAt)}
}

// scanMembership scans a row of membershipColumns.
func scanMembership(s Scanner) (*gatehouse.WorkspaceMember, error) {
	var m gatehouse.WorkspaceMember
	err := s.Scan(&m.ID, &m.WorkspaceID, &m.UserID, &m.Email, &m.Role, msTime(&m.CreatedAt))
	m.Role = gatehouse.WorkspaceRole(m.Role) // the column is the organization role
	return &m, err
}

// memberColumns are the columns of members, in scanMember order; the
// password hash shows only whether there is one.
const memberColumns = `id, email, first_name, last_name, role, created_at, password_hash IS NOT NULL, deactivated_at IS NOT NULL`

// memberInsertColumns are the columns of a new member (who has no password).
const memberInsertColumns = `organization_id, id, email, first_name, last_name, role, created_at`

// scanMember scans a row of memberColumns.
func scanMember(s Scanner) (*gatehouse.Member, error) {
	var m gatehouse.Member
	return &m, s.Scan(&m.ID, &m.Email, &m.FirstName, &m.LastName, &m.Role, msTime(&m.CreatedAt), &m.HasPassword, &m.Deactivated)
}

// guardrailColumns are the columns of guardrails, in scanGuardrail and
// guardrailArgs order.
const guardrailColumns = `id, organization_id, workspace_id, name, description, allowed_models, allowed_providers,
	ignored_models, ignored_providers, limit_nanos, reset_interval, include_byok_in_budgets, enforce_zdr,
	enforce_zdr_anthropic, enforce_zdr_openai, enforce_zdr_google, enforce_zdr_xai, enforce_zdr_other,
	enable_free_model_publication, enable_free_model_training, enable_paid_model_training,
	allowed_data_regions, content_filters, content_filter_builtins, created_at, updated_at`

// scanGuardrail scans a row of guardrailColumns.
//
// Like a key, a guardrail is read on every metered request and listed a
// hundred at a time: it is scanned into plain typed values (see scanKey).
func scanGuardrail(s Scanner) (*gatehouse.Guardrail, error) {
	var g gatehouse.Guardrail
	var desc, reset sql.NullString
	var lists [7]sql.NullString
	var limit, updated sql.NullInt64
	var flags [9]sql.NullBool
	var created int64
	err := s.Scan(&g.ID, &g.OrganizationID, &g.WorkspaceID, &g.Name, &desc, &lists[0], &lists[1], &lists[2], &lists[3],
		&limit, &reset, &g.IncludeBYOKInBudgets, &flags[0], &flags[1], &flags[2], &flags[3], &flags[4], &flags[5],
		&flags[6], &flags[7], &flags[8], &lists[4], &lists[5], &lists[6], &created, &updated)
	if err != nil {
		return nil, scanErr("guardrail", g.ID, err)
	}
	g.Description, g.ResetInterval = nullable(desc.Valid, desc.String), gatehouse.Interval(reset.String)
	g.LimitUSD = nullable(limit.Valid, gatehouse.Money(limit.Int64))
	for i, f := range []**bool{&g.EnforceZDR, &g.EnforceZDRAnthropic, &g.EnforceZDROpenAI, &g.EnforceZDRGoogle,
		&g.EnforceZDRXAI, &g.EnforceZDROther, &g.EnableFreeModelPublication, &g.EnableFreeModelTraining, &g.EnablePaidModelTraining} {
		*f = nullable(flags[i].Valid, flags[i].Bool)
	}
	g.CreatedAt, g.UpdatedAt = fromMS(created), nullTime(updated)
	for i, dst := range []any{&g.AllowedModels, &g.AllowedProviders, &g.IgnoredModels, &g.IgnoredProviders,
		&g.AllowedDataRegions, &g.ContentFilters, &g.ContentFilterBuiltins} {
		if !lists[i].Valid {
			continue
		}
		if err := json.Unmarshal([]byte(lists[i].String), dst); err != nil {
			return nil, scanErr("guardrail", g.ID, err)
		}
	}
	return &g, nil
}

// guardrailArgs returns the column values of g in guardrailColumns order.
func guardrailArgs(g *gatehouse.Guardrail) []any {
	return []any{g.ID, g.OrganizationID, g.WorkspaceID, g.Name, g.Description, jsonCol{g.AllowedModels},
		jsonCol{g.AllowedProviders}, jsonCol{g.IgnoredModels}, jsonCol{g.IgnoredProviders}, nullMoney(g.LimitUSD),
		nullIfEmpty(g.ResetInterval), g.IncludeBYOKInBudgets, g.EnforceZDR, g.EnforceZDRAnthropic, g.EnforceZDROpenAI,
		g.EnforceZDRGoogle, g.EnforceZDRXAI, g.EnforceZDROther, g.EnableFreeModelPublication,
		g.EnableFreeModelTraining, g.EnablePaidModelTraining, jsonCol{g.AllowedDataRegions},
		jsonCol{g.ContentFilters}, jsonCol{g.ContentFilterBuiltins}, ms(g.CreatedAt), ms(g.UpdatedAt)}
}

// destinationColumns are the columns of destinations, in scanDestination
// and destinationArgs order.
const destinationColumns = `id, organization_id, workspace_id, name, type, config, secrets, enabled, privacy_mode,
	sampling_rate, api_key_hashes, filter_rules, regions, broadcast_generation_cost, broadcast_generation_identity,
	broadcast_generation_request_context, created_at, updated_at, deleted_at`

// destinationSecrets is the plaintext of the sealed secrets column: the
// secret configuration values and every header. A nil Headers map stays nil
// (no headers) and an empty one stays empty.
type destinationSecrets struct {
	Values  map[string]string `json:"values,omitempty"`
	Headers map[string]string `json:"headers"`
}

// sealConfig splits c into the JSON of its non-secret values and the sealed
// JSON of its secrets (nil when there are none), bound to the destination id.
func sealConfig(box *gatehouse.SecretBox, id string, c gatehouse.DestinationConfig) (string, any, error) {
	plain := map[string]string{}
	secret := destinationSecrets{Headers: c.Headers}
	for k, v := range c.Values {
		if !gatehouse.IsSecretConfigKey(k) {
			plain[k] = v
			continue
		}
		if secret.Values == nil {
			secret.Values = map[string]string{}
		}
		secret.Values[k] = v
	}
	config, err := json.Marshal(plain)
	if err != nil {
		return "", nil, err
	}
	if secret.Values == nil && secret.Headers == nil {
		return string(config), nil, nil
	}
	sealed, err := json.Marshal(secret)
	if err != nil {
		return "", nil, err
	}
	return string(config), box.Seal(sealed, []byte(id)), nil
}

// errUnopenable is openConfig's error for sealed secrets that no key of
// the box opens.
var errUnopenable = errors.New("no key opens the sealed secrets")

// openConfig is the inverse of sealConfig. Errors never hold secret values.
// Secrets that no key of the box opens return the non-secret values and
// an error wrapping errUnopenable.
func openConfig(box *gatehouse.SecretBox, id string, config string, sealed *string) (gatehouse.DestinationConfig, error) {
	c := gatehouse.DestinationConfig{Values: map[string]string{}}
	if err := json.Unmarshal([]byte(config), &c.Values); err != nil {
		return c, fmt.Errorf("destination %s: decode config: %w", id, err)
	}
	if sealed == nil {
		return c, nil
	}
	plaintext, err := box.Open(*sealed, []byte(id))
	if err != nil {
		return c, fmt.Errorf("destination %s: open secrets (has the secret key changed?): %w: %w", id, errUnopenable, err)
	}
	var secret destinationSecrets
	if err := json.Unmarshal(plaintext, &secret); err != nil {
		return c, fmt.Errorf("destination %s: decode secrets: malformed document", id)
	}
	for k, v := range secret.Values {
		c.Values[k] = v
	}
	c.Headers = secret.Headers
	return c, nil
}

// scanDestination scans a destination row and opens its secrets; one
// whose secrets no key opens is returned with SecretsUnreadable set.
func scanDestination(box *gatehouse.SecretBox, s Scanner) (*gatehouse.Destination, error) {
	var d gatehouse.Destination
	var config string
	var secrets *string
	err := s.Scan(&d.ID, &d.OrganizationID, &d.WorkspaceID, &d.Name, &d.Type, &config, &secrets, &d.Enabled,
		&d.PrivacyMode, &d.SamplingRate, jsonCol{&d.APIKeyHashes}, jsonCol{&d.FilterRules}, jsonCol{&d.Regions},
		&d.BroadcastGenerationCost, &d.BroadcastGenerationIdentity, &d.BroadcastGenerationRequestContext,
		msTime(&d.CreatedAt), msTime(&d.UpdatedAt), msTime(&d.DeletedAt))
	if err != nil {
		return nil, scanErr("destination", d.ID, err)
	}
	d.Config, err = openConfig(box, d.ID, config, secrets)
	if errors.Is(err, errUnopenable) {
		d.SecretsUnreadable, err = true, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// destinationArgs returns the column values of d in destinationColumns order.
func destinationArgs(box *gatehouse.SecretBox, d *gatehouse.Destination) ([]any, error) {
	config, secrets, err := sealConfig(box, d.ID, d.Config)
	if err != nil {
		return nil, err
	}
	return []any{d.ID, d.OrganizationID, d.WorkspaceID, d.Name, d.Type, config, secrets, d.Enabled, d.PrivacyMode,
		d.SamplingRate, jsonCol{d.APIKeyHashes}, jsonCol{d.FilterRules}, jsonCol{d.Regions}, d.BroadcastGenerationCost,
		d.BroadcastGenerationIdentity, d.BroadcastGenerationRequestContext, ms(d.CreatedAt), ms(d.UpdatedAt), ms(d.DeletedAt)}, nil
}

// membershipColumns are the columns of a workspace membership, with the
// member's role: workspace_members wm joined with members m.
const membershipColumns = `wm.id, wm.workspace_id, wm.user_id, m.email, m.role, wm.created_at`

// keyAssignmentColumns are the columns of a key assignment with its key's
// name: key_assignments a joined with api_keys k.
const keyAssignmentColumns = `a.id, a.guardrail_id, a.key_hash, k.name, a.assigned_by, a.created_at`

// scanKeyAssignment scans a row of keyAssignmentColumns.
func scanKeyAssignment(s Scanner) (*gatehouse.KeyAssignment, error) {
	var a gatehouse.KeyAssignment
	return &a, s.Scan(&a.ID, &a.GuardrailID, &a.KeyHash, &a.KeyName, &a.AssignedBy, msTime(&a.CreatedAt))
}

// memberAssignmentColumns are the columns of member_assignments a.
const memberAssignmentColumns = `a.id, a.guardrail_id, a.user_id, a.organization_id, a.assigned_by, a.created_at`

// scanMemberAssignment scans a row of memberAssignmentColumns.
func scanMemberAssignment(s Scanner) (*gatehouse.MemberAssignment, error) {
	var a gatehouse.MemberAssignment
	return &a, s.Scan(&a.ID, &a.GuardrailID, &a.UserID, &a.OrganizationID, &a.AssignedBy, msTime(&a.CreatedAt))
}

// auditColumns are the columns of audit_log, in scanAuditEntry and
// auditArgs order.
const auditColumns = `id, organization_id, at, actor_key_hash, actor_user_id, operation, resource_type,
	resource_ids, details, result, request_id, client_request_id, actor_system`

// auditArgs returns the column values of e in auditColumns order: the
// resource ids as a JSON array (never NULL), the details as a JSON object
// or NULL.
func auditArgs(e *gatehouse.AuditEntry) []any {
	ids := e.ResourceIDs
	if ids == nil {
		ids = []string{}
	}
	return []any{e.ID, e.OrganizationID, ms(e.At), e.ActorKeyHash, e.ActorUserID, e.Operation, e.ResourceType,
		jsonCol{ids}, jsonCol{e.Details}, e.Result, e.RequestID, e.ClientRequestID, e.ActorSystem}
}

// scanAuditEntry scans a row of auditColumns. JSON numbers in the details
// come back as float64, JSON arrays as []any.
func scanAuditEntry(s Scanner) (*gatehouse.AuditEntry, error) {
	var e gatehouse.AuditEntry
	if err := s.Scan(&e.ID, &e.OrganizationID, msTime(&e.At), &e.ActorKeyHash, &e.ActorUserID, &e.Operation,
		&e.ResourceType, jsonCol{&e.ResourceIDs}, jsonCol{&e.Details}, &e.Result, &e.RequestID, &e.ClientRequestID, &e.ActorSystem); err != nil {
		return nil, scanErr("audit entry", e.ID, err)
	}
	if e.ResourceIDs == nil {
		e.ResourceIDs = []string{}
	}
	return &e, nil
}

// auditWhere returns the condition on audit_log rows that f selects in the
// organization, and its arguments.
//
// A resource id is matched inside the JSON text of resource_ids (an array
// of strings, encoded without spaces) as a whole element: its JSON-quoted
// form between the array's delimiters ([ or , before, , or ] after), so
// "ab" does not match "xaby", nor "," the comma between two ids. It is
// matched with replace(), not LIKE: SQLite's LIKE ignores ASCII case where
// PostgreSQL's does not, while replace() is case-sensitive on both and
// takes the id literally, % and _ included, with nothing to escape.
func auditWhere(orgID string, f gatehouse.AuditFilter) (where string, args []any) {
	args = []any{orgID}
	arg := func(v any) string {
		args = append(args, v)
		return "?"
	}
	conds := []string{"organization_id = ?"}
	if f.Since != nil {
		conds = append(conds, "at >= "+arg(ceilMS(*f.Since)))
	}
	if f.Until != nil {
		conds = append(conds, "at < "+arg(ceilMS(*f.Until)))
	}
	if f.Actor != "" {
		conds = append(conds, "(actor_key_hash = "+arg(f.Actor)+" OR actor_user_id = "+arg(f.Actor)+")")
	}
	if f.Operation != "" {
		conds = append(conds, "operation = "+arg(f.Operation))
	}
	if f.ResourceType != "" {
		conds = append(conds, "resource_type = "+arg(f.ResourceType))
	}
	if f.ResourceID != "" {
		quoted, _ := json.Marshal(f.ResourceID) // a string always encodes
		var element []string
		for _, around := range [][2]string{{"[", "]"}, {"[", ","}, {",", ","}, {",", "]"}} {
			element = append(element, "replace(resource_ids, "+arg(around[0]+string(quoted)+around[1])+", '') <> resource_ids")
		}
		conds = append(conds, "("+strings.Join(element, " OR ")+")")
	}
	return strings.Join(conds, " AND "), args
}

// ceilMS returns the first whole millisecond at or after t: entries are
// stamped in whole milliseconds, so at >= t holds exactly when
// at >= ceilMS(t), and at < t exactly when at < ceilMS(t).
func ceilMS(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// destinationChangedFields returns the wire names of the fields u sets, for
// audit details. A config change is "config" only: never its keys or
// values. (DestinationUpdate has no JSON tags and a pointer field, so
// gatehouse.ChangedFields does not apply to it.)
func destinationChangedFields(u gatehouse.DestinationUpdate) []string {
	out := []string{}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"name", u.Name.Set}, {"config", u.Config != nil}, {"enabled", u.Enabled.Set},
		{"privacy_mode", u.PrivacyMode.Set}, {"sampling_rate", u.SamplingRate.Set},
		{"api_key_hashes", u.APIKeyHashes.Set}, {"filter_rules", u.FilterRules.Set}, {"regions", u.Regions.Set},
		{"broadcast_generation_cost", u.BroadcastGenerationCost.Set},
		{"broadcast_generation_identity", u.BroadcastGenerationIdentity.Set},
		{"broadcast_generation_request_context", u.BroadcastGenerationRequestContext.Set},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// counterColumns are the ordinary then the BYOK counter columns shared by
// api_keys and guardrail_usage, in scanCounters order.
const counterColumns = `usage_total, usage_day, usage_day_start, usage_week, usage_week_start, usage_month, usage_month_start,
	byok_total, byok_day, byok_day_start, byok_week, byok_week_start, byok_month, byok_month_start`

// scanCounters scans a row of counterColumns.
func scanCounters(s Scanner) (usage, byok gatehouse.Counter, err error) {
	err = s.Scan(append(counterDest(&usage), counterDest(&byok)...)...)
	return usage, byok, err
}

// generationColumns are the columns of generations, in scanGeneration and
// generationArgs order.
const generationColumns = `id, organization_id, workspace_id, key_hash, model, provider, upstream_id, prompt_tokens,
	completion_tokens, cost, byok, streamed, finish_reason, status, latency_ms, generation_ms, session_id,
	external_user, created_at, http_referer, app_title, user_agent, provider_responses, cache_read_tokens, cache_write_tokens`

// generationArgs returns the column values of g in generationColumns order.
func generationArgs(g *gatehouse.Generation) []any {
	return []any{g.ID, g.OrganizationID, g.WorkspaceID, g.KeyHash, g.Model, g.Provider, g.UpstreamID, g.PromptTokens,
		g.CompletionTokens, int64(g.Cost), g.BYOK, g.Streamed, g.FinishReason, g.Status, g.LatencyMS, g.GenerationMS,
		g.SessionID, g.ExternalUser, ms(g.CreatedAt), g.HTTPReferer, g.AppTitle, g.UserAgent, providerResponses(g),
		g.CacheReadTokens, g.CacheWriteTokens}
}

// providerResponses encodes a generation's attempts (NULL: none kept).
func providerResponses(g *gatehouse.Generation) *string {
	if g.ProviderResponses == nil {
		return nil
	}
	b, _ := json.Marshal(g.ProviderResponses) // plain values: it cannot fail
	return new(string(b))
}

// scanGeneration scans a row of generationColumns.
func scanGeneration(s Scanner) (*gatehouse.Generation, error) {
	var g gatehouse.Generation
	var attempts *string
	if err := s.Scan(&g.ID, &g.OrganizationID, &g.WorkspaceID, &g.KeyHash, &g.Model, &g.Provider, &g.UpstreamID,
		&g.PromptTokens, &g.CompletionTokens, &g.Cost, &g.BYOK, &g.Streamed, &g.FinishReason, &g.Status, &g.LatencyMS,
		&g.GenerationMS, &g.SessionID, &g.ExternalUser, msTime(&g.CreatedAt), &g.HTTPReferer, &g.AppTitle,
		&g.UserAgent, &attempts, &g.CacheReadTokens, &g.CacheWriteTokens); err != nil {
		return nil, err
	}
	if attempts != nil {
		if err := json.Unmarshal([]byte(*attempts), &g.ProviderResponses); err != nil {
			return nil, fmt.Errorf("generation %s: provider_responses: %w", g.ID, err)
		}
	}
	return &g, nil
}

// keyInsertColumns are the columns a new key is inserted with, in
// keyInsertArgs order.
const keyInsertColumns = `hash, organization_id, workspace_id, management, name, limit_nanos, limit_reset,
	include_byok_in_limit, creator_user_id, external_user, external_key_hash, created_at, expires_at, parent_key_hash`

// keyInsertArgs returns the values of keyInsertColumns for a new key.
func keyInsertArgs(k *gatehouse.Key, externalKeyHash *string) []any {
	var workspace any
	if !k.Management {
		workspace = k.WorkspaceID // management keys belong to no workspace
	}
	return []any{k.Hash, k.OrganizationID, workspace, k.Management, k.Name, nullMoney(k.Limit), nullIfEmpty(k.LimitReset),
		k.IncludeBYOKInLimit, k.CreatorUserID, k.ExternalUser, externalKeyHash, ms(k.CreatedAt), ms(k.ExpiresAt), k.ParentKeyHash}
}

// keyUpdateArgs returns, for an UPDATE of api_keys setting name, disabled,
// include_byok_in_limit, limit_nanos, limit_reset, expires_at and
// updated_at (in that order) WHERE hash is the last parameter, the values
// of a changed key.
func keyUpdateArgs(k *gatehouse.Key) []any {
	return []any{k.Name, k.Disabled, k.IncludeBYOKInLimit, nullMoney(k.Limit), nullIfEmpty(k.LimitReset), ms(k.ExpiresAt), ms(k.UpdatedAt), k.Hash}
}
