// Row mapping: the column lists (identical in both schemas), the scanners
// and the argument builders. Timestamps are Unix milliseconds; money is
// integer nano-USD; lists and documents are JSON text.

package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gatehouse"
)

// ms returns t as Unix milliseconds, the unit of every timestamp column.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS returns the UTC time of Unix milliseconds.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// nullMS returns the column value of an optional time.
func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

// timePtr, strPtr, boolPtr and moneyPtr return the optional value of a
// nullable column.
func timePtr(v sql.NullInt64) *time.Time        { return ptrIf(v.Valid, fromMS(v.Int64)) }
func strPtr(v sql.NullString) *string           { return ptrIf(v.Valid, v.String) }
func boolPtr(v sql.NullBool) *bool              { return ptrIf(v.Valid, v.Bool) }
func moneyPtr(v sql.NullInt64) *gatehouse.Money { return ptrIf(v.Valid, gatehouse.Money(v.Int64)) }

// ptrIf returns &v when valid, else nil.
func ptrIf[T any](valid bool, v T) *T {
	if !valid {
		return nil
	}
	return &v
}

// nullInterval returns the column value of an interval (NULL for none).
func nullInterval(i gatehouse.Interval) any {
	if i == gatehouse.NoReset {
		return nil
	}
	return string(i)
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
func scanKey(s Scanner) (*gatehouse.Key, error) {
	var k gatehouse.Key
	var workspace, reset, creator, external, parent sql.NullString
	var limit, updated, expires sql.NullInt64
	var created int64
	var u, b counterCols
	if err := s.Scan(slices.Concat([]any{&k.Hash, &k.OrganizationID, &workspace, &k.Management, &k.Name, &k.Disabled,
		&limit, &reset, &k.IncludeBYOKInLimit, &creator, &external, &created, &updated, &expires},
		u.dest(), b.dest(), []any{&parent})...); err != nil {
		return nil, err
	}
	k.WorkspaceID = workspace.String
	k.Limit, k.LimitReset = moneyPtr(limit), gatehouse.Interval(reset.String)
	k.CreatorUserID, k.ExternalUser, k.ParentKeyHash = strPtr(creator), strPtr(external), strPtr(parent)
	k.CreatedAt, k.UpdatedAt, k.ExpiresAt = fromMS(created), timePtr(updated), timePtr(expires)
	k.Usage, k.BYOKUsage = u.counter(), b.counter()
	return &k, nil
}

// counterCols are the columns of one usage counter.
type counterCols struct {
	total, day, week, month         int64
	dayStart, weekStart, monthStart int64
}

// dest returns where to scan the columns, in counterFields order.
func (c *counterCols) dest() []any {
	return []any{&c.total, &c.day, &c.dayStart, &c.week, &c.weekStart, &c.month, &c.monthStart}
}

func (c counterCols) counter() gatehouse.Counter {
	return gatehouse.Counter{
		Total: gatehouse.Money(c.total),
		Day:   gatehouse.Money(c.day), DayStart: fromMS(c.dayStart),
		Week: gatehouse.Money(c.week), WeekStart: fromMS(c.weekStart),
		Month: gatehouse.Money(c.month), MonthStart: fromMS(c.monthStart),
	}
}

// counterArgs returns the column values of a counter, in column order.
func counterArgs(c gatehouse.Counter) []any {
	return []any{int64(c.Total), int64(c.Day), ms(c.DayStart), int64(c.Week), ms(c.WeekStart), int64(c.Month), ms(c.MonthStart)}
}

// workspaceColumns are the columns of workspaces, in scanWorkspace order.
const workspaceColumns = `id, organization_id, name, slug, description, default_text_model, default_image_model,
	default_provider_sort, disabled_server_tools, io_logging_api_key_ids, io_logging_sampling_rate,
	is_data_discount_logging_enabled, is_observability_broadcast_enabled, is_observability_io_logging_enabled,
	include_byok_in_budgets, is_default, created_by, created_at, updated_at`

// scanWorkspace scans a row of workspaceColumns.
func scanWorkspace(s Scanner) (*gatehouse.Workspace, error) {
	var w gatehouse.Workspace
	var desc, text, image, sort, created sql.NullString
	var tools, ids sql.NullString
	var createdAt int64
	var updatedAt sql.NullInt64
	if err := s.Scan(&w.ID, &w.OrganizationID, &w.Name, &w.Slug, &desc, &text, &image, &sort, &tools, &ids,
		&w.IOLoggingSamplingRate, &w.IsDataDiscountLoggingEnabled, &w.IsObservabilityBroadcastEnabled,
		&w.IsObservabilityIOLoggingEnabled, &w.IncludeBYOKInBudgets, &w.IsDefault, &created, &createdAt, &updatedAt); err != nil {
		return nil, err
	}
	w.Description, w.DefaultTextModel, w.DefaultImageModel, w.DefaultProviderSort = strPtr(desc), strPtr(text), strPtr(image), strPtr(sort)
	w.CreatedBy, w.CreatedAt, w.UpdatedAt = strPtr(created), fromMS(createdAt), timePtr(updatedAt)
	return &w, scanJSON(jsonCol{tools, &w.DisabledServerTools}, jsonCol{ids, &w.IOLoggingAPIKeyIDs})
}

// scanMembership scans a row of membershipColumns.
func scanMembership(s Scanner) (*gatehouse.WorkspaceMember, error) {
	var m gatehouse.WorkspaceMember
	var role string
	var created int64
	err := s.Scan(&m.ID, &m.WorkspaceID, &m.UserID, &role, &created)
	m.Role, m.CreatedAt = gatehouse.WorkspaceRole(role), fromMS(created)
	return &m, err
}

// memberColumns are the columns of members, in scanMember order.
const memberColumns = `id, email, first_name, last_name, role, created_at`

// scanMember scans a row of memberColumns.
func scanMember(s Scanner) (*gatehouse.Member, error) {
	var m gatehouse.Member
	var first, last sql.NullString
	var created int64
	if err := s.Scan(&m.ID, &m.Email, &first, &last, &m.Role, &created); err != nil {
		return nil, err
	}
	m.FirstName, m.LastName, m.CreatedAt = strPtr(first), strPtr(last), fromMS(created)
	return &m, nil
}

// guardrailColumns are the columns of guardrails, in scanGuardrail and
// guardrailArgs order.
const guardrailColumns = `id, organization_id, workspace_id, name, description, allowed_models, allowed_providers,
	ignored_models, ignored_providers, limit_nanos, reset_interval, include_byok_in_budgets, enforce_zdr,
	enforce_zdr_anthropic, enforce_zdr_openai, enforce_zdr_google, enforce_zdr_xai, enforce_zdr_other,
	enable_free_model_publication, enable_free_model_training, enable_paid_model_training,
	allowed_data_regions, content_filters, content_filter_builtins, created_at, updated_at`

// scanGuardrail scans a row of guardrailColumns.
func scanGuardrail(s Scanner) (*gatehouse.Guardrail, error) {
	var g gatehouse.Guardrail
	var desc, reset sql.NullString
	var models, providers, ignModels, ignProviders, regions, filters, builtins sql.NullString
	var limit, updated sql.NullInt64
	var zdr [6]sql.NullBool
	var free, freeTraining, paidTraining sql.NullBool
	var created int64
	if err := s.Scan(&g.ID, &g.OrganizationID, &g.WorkspaceID, &g.Name, &desc, &models, &providers,
		&ignModels, &ignProviders, &limit, &reset, &g.IncludeBYOKInBudgets, &zdr[0],
		&zdr[1], &zdr[2], &zdr[3], &zdr[4], &zdr[5],
		&free, &freeTraining, &paidTraining,
		&regions, &filters, &builtins, &created, &updated); err != nil {
		return nil, err
	}
	g.Description, g.LimitUSD, g.ResetInterval = strPtr(desc), moneyPtr(limit), gatehouse.Interval(reset.String)
	g.EnforceZDR, g.EnforceZDRAnthropic, g.EnforceZDROpenAI = boolPtr(zdr[0]), boolPtr(zdr[1]), boolPtr(zdr[2])
	g.EnforceZDRGoogle, g.EnforceZDRXAI, g.EnforceZDROther = boolPtr(zdr[3]), boolPtr(zdr[4]), boolPtr(zdr[5])
	g.EnableFreeModelPublication = boolPtr(free)
	g.EnableFreeModelTraining, g.EnablePaidModelTraining = boolPtr(freeTraining), boolPtr(paidTraining)
	g.CreatedAt, g.UpdatedAt = fromMS(created), timePtr(updated)
	if err := scanJSON(jsonCol{models, &g.AllowedModels}, jsonCol{providers, &g.AllowedProviders},
		jsonCol{ignModels, &g.IgnoredModels}, jsonCol{ignProviders, &g.IgnoredProviders}, jsonCol{regions, &g.AllowedDataRegions},
		jsonCol{filters, &g.ContentFilters}, jsonCol{builtins, &g.ContentFilterBuiltins}); err != nil {
		return nil, fmt.Errorf("guardrail %s: %w", g.ID, err)
	}
	return &g, nil
}

// guardrailArgs returns the column values of g in guardrailColumns order.
func guardrailArgs(g *gatehouse.Guardrail) ([]any, error) {
	j, err := jsonArgs(g.AllowedModels, g.AllowedProviders, g.IgnoredModels, g.IgnoredProviders,
		g.AllowedDataRegions, g.ContentFilters, g.ContentFilterBuiltins)
	if err != nil {
		return nil, err
	}
	return []any{g.ID, g.OrganizationID, g.WorkspaceID, g.Name, g.Description, j[0], j[1],
		j[2], j[3], nullMoney(g.LimitUSD), nullInterval(g.ResetInterval), g.IncludeBYOKInBudgets, g.EnforceZDR,
		g.EnforceZDRAnthropic, g.EnforceZDROpenAI, g.EnforceZDRGoogle, g.EnforceZDRXAI, g.EnforceZDROther,
		g.EnableFreeModelPublication, g.EnableFreeModelTraining, g.EnablePaidModelTraining,
		j[4], j[5], j[6], ms(g.CreatedAt), nullMS(g.UpdatedAt)}, nil
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

// openConfig is the inverse of sealConfig. Errors never hold secret values.
func openConfig(box *gatehouse.SecretBox, id string, config string, sealed sql.NullString) (gatehouse.DestinationConfig, error) {
	c := gatehouse.DestinationConfig{Values: map[string]string{}}
	if err := json.Unmarshal([]byte(config), &c.Values); err != nil {
		return c, fmt.Errorf("destination %s: decode config: %w", id, err)
	}
	if !sealed.Valid {
		return c, nil
	}
	plaintext, err := box.Open(sealed.String, []byte(id))
	if err != nil {
		return c, fmt.Errorf("destination %s: open secrets (has the secret key changed?): %w", id, err)
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

// scanDestination scans a destination row and opens its secrets.
func scanDestination(box *gatehouse.SecretBox, s Scanner) (*gatehouse.Destination, error) {
	var d gatehouse.Destination
	var name, secrets, hashes, rules, regions sql.NullString
	var config string
	var created, updated int64
	var deleted sql.NullInt64
	if err := s.Scan(&d.ID, &d.OrganizationID, &d.WorkspaceID, &name, &d.Type, &config, &secrets, &d.Enabled,
		&d.PrivacyMode, &d.SamplingRate, &hashes, &rules, &regions, &d.BroadcastGenerationCost,
		&d.BroadcastGenerationIdentity, &d.BroadcastGenerationRequestContext, &created, &updated, &deleted); err != nil {
		return nil, err
	}
	d.Name, d.CreatedAt, d.UpdatedAt, d.DeletedAt = strPtr(name), fromMS(created), fromMS(updated), timePtr(deleted)
	var err error
	if d.Config, err = openConfig(box, d.ID, config, secrets); err != nil {
		return nil, err
	}
	if rules.Valid {
		d.FilterRules = &gatehouse.FilterRules{}
	}
	if err := scanJSON(jsonCol{hashes, &d.APIKeyHashes}, jsonCol{rules, d.FilterRules}, jsonCol{regions, &d.Regions}); err != nil {
		return nil, fmt.Errorf("destination %s: %w", d.ID, err)
	}
	return &d, nil
}

// destinationArgs returns the column values of d in destinationColumns order.
func destinationArgs(box *gatehouse.SecretBox, d *gatehouse.Destination) ([]any, error) {
	config, secrets, err := sealConfig(box, d.ID, d.Config)
	if err != nil {
		return nil, err
	}
	j, err := jsonArgs(d.APIKeyHashes, d.FilterRules, d.Regions)
	if err != nil {
		return nil, err
	}
	return []any{d.ID, d.OrganizationID, d.WorkspaceID, d.Name, d.Type, config, secrets, d.Enabled, d.PrivacyMode,
		d.SamplingRate, j[0], j[1], j[2], d.BroadcastGenerationCost, d.BroadcastGenerationIdentity,
		d.BroadcastGenerationRequestContext, ms(d.CreatedAt), ms(d.UpdatedAt), nullMS(d.DeletedAt)}, nil
}

// jsonArg returns the column value of a JSON column: NULL for a nil slice,
// map or pointer, else the JSON text.
func jsonArg(v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// jsonArgs is jsonArg over several values; it stops at the first error.
func jsonArgs(vs ...any) ([]any, error) {
	out := make([]any, len(vs))
	for i, v := range vs {
		var err error
		if out[i], err = jsonArg(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jsonCol is a nullable JSON column and where to decode it.
type jsonCol struct {
	col sql.NullString
	dst any
}

// scanJSON decodes each column into its dst; NULL leaves dst alone. It
// stops at the first error.
func scanJSON(cols ...jsonCol) error {
	for _, c := range cols {
		if !c.col.Valid {
			continue
		}
		if err := json.Unmarshal([]byte(c.col.String), c.dst); err != nil {
			return err
		}
	}
	return nil
}

// membershipColumns are the columns of a workspace membership, with the
// member's role: workspace_members wm joined with members m.
const membershipColumns = `wm.id, wm.workspace_id, wm.user_id, m.role, wm.created_at`

// keyAssignmentColumns are the columns of a key assignment with its key's
// name: key_assignments a joined with api_keys k.
const keyAssignmentColumns = `a.id, a.guardrail_id, a.key_hash, k.name, a.assigned_by, a.created_at`

// scanKeyAssignment scans a row of keyAssignmentColumns.
func scanKeyAssignment(s Scanner) (*gatehouse.KeyAssignment, error) {
	var a gatehouse.KeyAssignment
	var by sql.NullString
	var created int64
	err := s.Scan(&a.ID, &a.GuardrailID, &a.KeyHash, &a.KeyName, &by, &created)
	a.AssignedBy, a.CreatedAt = strPtr(by), fromMS(created)
	return &a, err
}

// memberAssignmentColumns are the columns of member_assignments a.
const memberAssignmentColumns = `a.id, a.guardrail_id, a.user_id, a.organization_id, a.assigned_by, a.created_at`

// scanMemberAssignment scans a row of memberAssignmentColumns.
func scanMemberAssignment(s Scanner) (*gatehouse.MemberAssignment, error) {
	var a gatehouse.MemberAssignment
	var by sql.NullString
	var created int64
	err := s.Scan(&a.ID, &a.GuardrailID, &a.UserID, &a.OrganizationID, &by, &created)
	a.AssignedBy, a.CreatedAt = strPtr(by), fromMS(created)
	return &a, err
}

// auditColumns are the columns of audit_log, in scanAuditEntry and
// auditArgs order.
const auditColumns = `id, organization_id, at, actor_key_hash, actor_user_id, operation, resource_type,
	resource_ids, details, result, request_id, client_request_id`

// auditArgs returns the column values of e in auditColumns order: the
// resource ids as a JSON array (never NULL), the details as a JSON object
// or NULL.
func auditArgs(e *gatehouse.AuditEntry) ([]any, error) {
	ids := e.ResourceIDs
	if ids == nil {
		ids = []string{}
	}
	j, err := jsonArgs(ids, e.Details)
	if err != nil {
		return nil, err
	}
	return []any{e.ID, e.OrganizationID, ms(e.At), e.ActorKeyHash, e.ActorUserID, e.Operation, e.ResourceType,
		j[0], j[1], e.Result, e.RequestID, e.ClientRequestID}, nil
}

// scanAuditEntry scans a row of auditColumns. JSON numbers in the details
// come back as float64, JSON arrays as []any.
func scanAuditEntry(s Scanner) (*gatehouse.AuditEntry, error) {
	var e gatehouse.AuditEntry
	var keyHash, userID, details, requestID, clientRequestID sql.NullString
	var ids string
	var at int64
	if err := s.Scan(&e.ID, &e.OrganizationID, &at, &keyHash, &userID, &e.Operation, &e.ResourceType,
		&ids, &details, &e.Result, &requestID, &clientRequestID); err != nil {
		return nil, err
	}
	e.At, e.ActorKeyHash, e.ActorUserID, e.RequestID = fromMS(at), strPtr(keyHash), strPtr(userID), strPtr(requestID)
	e.ClientRequestID = strPtr(clientRequestID)
	if err := json.Unmarshal([]byte(ids), &e.ResourceIDs); err != nil {
		return nil, fmt.Errorf("audit entry %s: resource_ids: %w", e.ID, err)
	}
	if e.ResourceIDs == nil {
		e.ResourceIDs = []string{}
	}
	if err := scanJSON(jsonCol{details, &e.Details}); err != nil {
		return nil, fmt.Errorf("audit entry %s: details: %w", e.ID, err)
	}
	return &e, nil
}

// auditWhere returns the condition on audit_log rows that f selects in the
// organization, and its arguments.
//
// A resource id is matched inside the JSON text of resource_ids as its
// JSON-quoted form, so "ab" does not match "xaby". It is matched with
// replace(), not LIKE: SQLite's LIKE ignores ASCII case where PostgreSQL's
// does not, while replace() is case-sensitive on both and takes the id
// literally, % and _ included, with nothing to escape.
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
	if f.ResourceType != "" {
		conds = append(conds, "resource_type = "+arg(f.ResourceType))
	}
	if f.ResourceID != "" {
		quoted, _ := json.Marshal(f.ResourceID) // a string always encodes
		conds = append(conds, "replace(resource_ids, "+arg(string(quoted))+", '') <> resource_ids")
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

// counterFields are the column suffixes of a counter, in counterArgs order.
var counterFields = []string{"total", "day", "day_start", "week", "week_start", "month", "month_start"}

// counterAssignments renders "prefix_total = ?, prefix_day = ?, ..." for an
// UPDATE of one counter.
func counterAssignments(prefix string) string {
	parts := make([]string, len(counterFields))
	for i, f := range counterFields {
		parts[i] = prefix + "_" + f + " = ?"
	}
	return strings.Join(parts, ", ")
}

// counterColumns are the ordinary then the BYOK counter columns shared by
// api_keys and guardrail_usage, in scanCounters order.
const counterColumns = `usage_total, usage_day, usage_day_start, usage_week, usage_week_start, usage_month, usage_month_start,
	byok_total, byok_day, byok_day_start, byok_week, byok_week_start, byok_month, byok_month_start`

// scanCounters scans a row of counterColumns.
func scanCounters(s Scanner) (usage, byok gatehouse.Counter, err error) {
	var u, b counterCols
	err = s.Scan(append(u.dest(), b.dest()...)...)
	return u.counter(), b.counter(), err
}

// generationColumns are the columns of generations, in scanGeneration and
// generationArgs order.
const generationColumns = `id, organization_id, workspace_id, key_hash, model, provider, upstream_id, prompt_tokens,
	completion_tokens, cost, byok, streamed, finish_reason, status, latency_ms, generation_ms, session_id,
	external_user, created_at`

// generationArgs returns the column values of g in generationColumns order.
func generationArgs(g *gatehouse.Generation) []any {
	return []any{g.ID, g.OrganizationID, g.WorkspaceID, g.KeyHash, g.Model, g.Provider, g.UpstreamID, g.PromptTokens,
		g.CompletionTokens, int64(g.Cost), g.BYOK, g.Streamed, g.FinishReason, g.Status, g.LatencyMS, g.GenerationMS,
		g.SessionID, g.ExternalUser, ms(g.CreatedAt)}
}

// scanGeneration scans a row of generationColumns.
func scanGeneration(s Scanner) (*gatehouse.Generation, error) {
	var g gatehouse.Generation
	var upstream, finish, session, external sql.NullString
	var cost, created int64
	if err := s.Scan(&g.ID, &g.OrganizationID, &g.WorkspaceID, &g.KeyHash, &g.Model, &g.Provider, &upstream,
		&g.PromptTokens, &g.CompletionTokens, &cost, &g.BYOK, &g.Streamed, &finish, &g.Status, &g.LatencyMS,
		&g.GenerationMS, &session, &external, &created); err != nil {
		return nil, err
	}
	g.UpstreamID, g.FinishReason, g.SessionID, g.ExternalUser = strPtr(upstream), strPtr(finish), strPtr(session), strPtr(external)
	g.Cost, g.CreatedAt = gatehouse.Money(cost), fromMS(created)
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
	return []any{k.Hash, k.OrganizationID, workspace, k.Management, k.Name, nullMoney(k.Limit), nullInterval(k.LimitReset),
		k.IncludeBYOKInLimit, k.CreatorUserID, k.ExternalUser, externalKeyHash, ms(k.CreatedAt), nullMS(k.ExpiresAt), k.ParentKeyHash}
}

// keyUpdateArgs returns, for an UPDATE of api_keys setting name, disabled,
// include_byok_in_limit, limit_nanos, limit_reset and updated_at (in that
// order) WHERE hash is the last parameter, the values of a changed key.
func keyUpdateArgs(k *gatehouse.Key) []any {
	return []any{k.Name, k.Disabled, k.IncludeBYOKInLimit, nullMoney(k.Limit), nullInterval(k.LimitReset), nullMS(k.UpdatedAt), k.Hash}
}

// nullMoney returns the column value of an optional amount.
func nullMoney(m *gatehouse.Money) any {
	if m == nil {
		return nil
	}
	return int64(*m)
}
