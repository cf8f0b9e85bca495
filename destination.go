package gatehouse

import (
	"context"
	"crypto/subtle"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Destination is an observability destination of a workspace: where traces
// of its requests are sent. Deleting one is a soft delete.
type Destination struct {
	ID                                string
	OrganizationID                    string
	WorkspaceID                       string
	Name                              *string
	Type                              string
	Config                            DestinationConfig // plaintext, secrets included
	Enabled                           bool
	PrivacyMode                       bool
	SamplingRate                      float64
	APIKeyHashes                      []string // nil: every key
	FilterRules                       *FilterRules
	Regions                           []string
	BroadcastGenerationCost           bool
	BroadcastGenerationIdentity       bool
	BroadcastGenerationRequestContext bool
	CreatedAt                         time.Time
	UpdatedAt                         time.Time
	DeletedAt                         *time.Time
	// SecretsUnreadable reports that the destination's secrets were
	// sealed with a key the store does not hold (the secret key changed
	// without re-sealing them): Config then holds its other values only,
	// nothing is delivered to it, and a change of its configuration must
	// send its secrets again (see Apply).
	SecretsUnreadable bool
}

// DestinationConfig is the type-specific configuration of a destination.
// Every value is a string except "headers", a map of strings.
type DestinationConfig struct {
	Values  map[string]string
	Headers map[string]string
}

// FilterRules select which traces a destination receives.
type FilterRules struct {
	Enabled *bool        `json:"enabled,omitempty" null:"no"`
	Groups  []FilterRule `json:"groups"`
}

// FilterRule is one group of conditions joined by Logic.
type FilterRule struct {
	Logic string      `json:"logic,omitempty"`
	Rules []Condition `json:"rules"`
}

// Condition compares one field of a trace with a value.
type Condition struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	Value    any    `json:"value,omitempty"` // string or number
}

// destinationType describes one destination type: its name for people,
// and its configuration keys. Which key is secret is secretConfigKeys'.
// How a type delivers is package observe's registry (observe/types.go),
// which holds an entry for each type here; its tests fail when a type is
// accepted here and delivers nothing.
type destinationType struct {
	label    string
	required []string
	optional []string
	defaults map[string]string
}

// destinationTypes lists every destination type and its configuration
// keys. Every type has a key that names where it delivers (url, baseUrl,
// endpoint, host or otlpEndpoint), so that a self-hosted service, or a
// test's stand-in, can receive it.
var destinationTypes = map[string]destinationType{
	"arize":          {"Arize", []string{"apiKey", "spaceKey", "modelId"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://otlp.arize.com"}},
	"braintrust":     {"Braintrust", []string{"apiKey", "projectId"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://api.braintrust.dev"}},
	"clickhouse":     {"ClickHouse", []string{"host", "database", "username", "password"}, []string{"table"}, map[string]string{"table": "OPENROUTER_TRACES"}},
	"datadog":        {"Datadog", []string{"apiKey", "mlApp"}, []string{"url"}, map[string]string{"url": "https://api.datadoghq.com"}},
	"grafana":        {"Grafana Cloud", []string{"apiKey", "instanceId"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://otlp-gateway-prod-us-west-0.grafana.net"}},
	"langfuse":       {"Langfuse", []string{"publicKey", "secretKey"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://us.cloud.langfuse.com"}},
	"langsmith":      {"LangSmith", []string{"apiKey"}, []string{"endpoint", "project", "workspaceId"}, map[string]string{"endpoint": "https://api.smith.langchain.com", "project": "main"}},
	"newrelic":       {"New Relic", []string{"licenseKey"}, []string{"region", "baseUrl"}, map[string]string{"region": "us"}},
	"opik":           {"Opik", []string{"apiKey", "projectName", "workspace"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://www.comet.com/opik/api"}},
	"otel-collector": {"OpenTelemetry collector", []string{"endpoint"}, nil, nil},
	"posthog":        {"PostHog", []string{"apiKey"}, []string{"endpoint"}, map[string]string{"endpoint": "https://us.i.posthog.com"}},
	"ramp":           {"Ramp", []string{"apiKey"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://api.ramp.com/developer/v1/ai-usage/openrouter"}},
	"s3":             {"Amazon S3 (or compatible)", []string{"accessKeyId", "secretAccessKey", "bucketName"}, []string{"endpoint", "region", "sessionToken", "prefix", "pathTemplate"}, map[string]string{"prefix": "openrouter-traces", "pathTemplate": "{prefix}/{date}"}},
	"sentry":         {"Sentry", []string{"dsn", "otlpEndpoint"}, nil, nil},
	"snowflake":      {"Snowflake", []string{"account", "token"}, []string{"database", "schema", "table", "warehouse", "baseUrl"}, map[string]string{"database": "SNOWFLAKE_LEARNING_DB", "schema": "PUBLIC", "table": "OPENROUTER_TRACES", "warehouse": "COMPUTE_WH"}},
	"weave":          {"W&B Weave", []string{"apiKey", "entity", "project"}, []string{"baseUrl"}, map[string]string{"baseUrl": "https://trace.wandb.ai"}},
	"webhook":        {"Webhook", []string{"url"}, []string{"method"}, map[string]string{"method": "POST"}},
}

// DestinationTypeLabel names a destination type for people ("" for an
// unknown type).
func DestinationTypeLabel(typ string) string { return destinationTypes[typ].label }

// DestinationTypes returns the destination type names, sorted.
func DestinationTypes() []string {
	names := make([]string, 0, len(destinationTypes))
	for n := range destinationTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DestinationConfigKeys returns the configuration keys of a destination
// type, required then optional, and the defaults of the optional ones;
// ok is false for an unknown type.
func DestinationConfigKeys(typ string) (required, optional []string, defaults map[string]string, ok bool) {
	t, ok := destinationTypes[typ]
	return slices.Clone(t.required), slices.Clone(t.optional), maps.Clone(t.defaults), ok
}

// secretConfigKeys are the configuration keys whose values are credentials:
// encrypted at rest and masked in responses. Header values are secret too.
var secretConfigKeys = map[string]bool{
	"apiKey": true, "secretKey": true, "password": true, "token": true, "licenseKey": true,
	"secretAccessKey": true, "sessionToken": true, "dsn": true,
}

// urlConfigKeys must hold absolute http(s) URLs.
var urlConfigKeys = map[string]bool{
	"url": true, "baseUrl": true, "endpoint": true, "otlpEndpoint": true, "host": true, "dsn": true,
}

// routingConfigKeys decide where a destination connects, or whose account
// at the receiver its data lands in. Changing one re-sends the stored
// secrets to a new place, so a change must carry every secret again: else a
// management key could point a destination at its own server and receive
// the secrets someone else configured.
var routingConfigKeys = map[string]bool{
	"url": true, "baseUrl": true, "endpoint": true, "otlpEndpoint": true, "host": true,
	"region": true, "bucketName": true, "account": true, "projectId": true, "projectName": true,
	"project": true, "workspace": true, "workspaceId": true, "entity": true, "instanceId": true,
	"spaceKey": true, "database": true,
}

// IsAddressConfigKey reports whether a configuration key holds a URL or
// host that deliveries connect to, which the egress policy checks.
func IsAddressConfigKey(key string) bool { return urlConfigKeys[key] }

// IsSecretConfigKey reports whether a configuration key holds a credential.
func IsSecretConfigKey(key string) bool { return secretConfigKeys[key] }

// Destination limits.
const (
	MaxDestinationsPerType = 5
	MaxConfigValueLength   = 4096
	MaxHeaders             = 50
	MaxFilterGroups        = 20
	MaxConditionsPerGroup  = 50
	MaxAPIKeyHashesPerDest = 1000
)

// Mask hides a secret for display: asterisks and its last four characters,
// or only asterisks when it is shorter than 16 characters, where four would
// give away too much of it.
func Mask(secret string) string {
	r := []rune(secret)
	if len(r) < 16 {
		return maskedWhole
	}
	return maskedWhole + string(r[len(r)-4:])
}

// maskedWhole is how a secret that shows nothing of itself reads: short
// secrets and every header value.
const maskedWhole = "********"

// Masked returns a copy of c with every secret value masked.
func (c DestinationConfig) Masked() DestinationConfig {
	out := DestinationConfig{Values: make(map[string]string, len(c.Values))}
	for k, v := range c.Values {
		switch {
		case secretConfigKeys[k]:
			v = Mask(v)
		case urlConfigKeys[k]:
			v = maskUserinfo(v)
		}
		out.Values[k] = v
	}
	if c.Headers != nil {
		out.Headers = make(map[string]string, len(c.Headers))
		for k := range c.Headers {
			out.Headers[k] = maskedWhole // a header may be a short token, or hold one
		}
	}
	return out
}

// maskUserinfo hides the credentials of a URL stored before URLs had to be
// free of them (checkHTTPURL).
func maskUserinfo(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User(maskedWhole)
	return u.String()
}

// ShownConfig is the configuration a response shows: secrets masked. Of a
// destination whose secrets cannot be opened, the type's required secret
// keys show as masked (their values are stored, but unreadable); optional
// secrets and headers are not shown.
func (d *Destination) ShownConfig() DestinationConfig {
	out := d.Config.Masked()
	if !d.SecretsUnreadable {
		return out
	}
	for _, k := range destinationTypes[d.Type].required {
		if secretConfigKeys[k] {
			out.Values[k] = maskedWhole
		}
	}
	return out
}

// ErrSecretsUnreadable is the error of a change of configuration that
// needs a destination's secrets, which no key of the store opens.
func ErrSecretsUnreadable(id string, missing []string) error {
	return &Error{Code: EINVALID,
		Message: fmt.Sprintf("the secrets of destination %s cannot be opened with the server's secret key (the key changed "+
			"without re-sealing them): send %s again in clear in the same request, or delete the destination", id, strings.Join(missing, ", ")),
		Metadata: map[string]any{"destination_id": id, "secrets_required": missing}}
}

// resupplied checks, for a destination whose secrets cannot be opened,
// that a configuration change p gives every required secret in clear (and
// no masked secret or header, which would mean "unchanged"): the change
// seals what it gives, and what it does not give (optional secrets,
// headers not sent) is gone.
func (d *Destination) resupplied(p ConfigPatch) error {
	var missing []string
	for _, k := range destinationTypes[d.Type].required {
		if v := p.Values[k]; secretConfigKeys[k] && (v == nil || strings.HasPrefix(*v, maskedWhole)) {
			missing = append(missing, "config."+k)
		}
	}
	for k, v := range p.Values {
		if secretConfigKeys[k] && v != nil && strings.HasPrefix(*v, maskedWhole) && !slices.Contains(missing, "config."+k) {
			missing = append(missing, "config."+k)
		}
	}
	for k, v := range p.Headers {
		if p.HeadersSet && sameSecret(v, maskedWhole) {
			missing = append(missing, "config.headers."+k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return ErrSecretsUnreadable(d.ID, missing)
}

// ConfigPatch is the configuration given in a request: values by key, where
// a nil value (JSON null) removes an optional key.
type ConfigPatch struct {
	Values     map[string]*string
	Headers    map[string]string
	HeadersSet bool // headers present (a null headers value clears them)
}

// Merge returns the configuration of type typ after applying p to c (use a
// zero c on create). A secret sent back masked, as Mask shows it, keeps its
// current value. The result is validated and has defaults filled in.
func (c DestinationConfig) Merge(typ string, p ConfigPatch) (DestinationConfig, error) {
	spec, ok := destinationTypes[typ]
	if !ok {
		return DestinationConfig{}, FieldError("type", "must be one of %s", strings.Join(DestinationTypes(), ", "))
	}
	out := DestinationConfig{Values: map[string]string{}}
	for k, v := range c.Values {
		out.Values[k] = v
	}
	for k, v := range p.Values {
		field := "config." + k
		switch {
		case !slices.Contains(spec.required, k) && !slices.Contains(spec.optional, k):
			return DestinationConfig{}, FieldError(field, "unknown key for type %s (allowed: %s)", typ, strings.Join(slices.Concat(spec.required, spec.optional, []string{"headers"}), ", "))
		case v == nil:
			delete(out.Values, k)
		case secretConfigKeys[k] && c.Values[k] != "" && sameSecret(*v, Mask(c.Values[k])):
			// unchanged
		default:
			out.Values[k] = *v
		}
	}
	out.Headers = c.Headers
	if p.HeadersSet {
		out.Headers = nil
		if p.Headers != nil {
			out.Headers = make(map[string]string, len(p.Headers))
			for k, v := range p.Headers {
				if old, ok := c.Headers[k]; ok && sameSecret(v, maskedWhole) {
					v = old
				}
				out.Headers[k] = v
			}
		}
	}
	for k, v := range spec.defaults {
		if _, ok := out.Values[k]; !ok {
			out.Values[k] = v
		}
	}
	if err := out.validate(typ, spec); err != nil {
		return out, err
	}
	return out, c.checkResupplied(out, p)
}

// checkResupplied refuses a change of where the destination connects (old
// c to new out) unless p gives every secret that stays in clear, not masked:
// a stored secret may only go where it was configured to go.
func (c DestinationConfig) checkResupplied(out DestinationConfig, p ConfigPatch) error {
	var moved []string
	for k := range routingConfigKeys {
		if c.Values[k] != out.Values[k] {
			moved = append(moved, k)
		}
	}
	if len(c.Values) == 0 || len(moved) == 0 {
		return nil // a new destination, or one that stays where it was
	}
	var missing []string
	for k, old := range c.Values {
		if _, kept := out.Values[k]; !secretConfigKeys[k] || !kept {
			continue
		}
		if v := p.Values[k]; v == nil || sameSecret(*v, Mask(old)) {
			missing = append(missing, "config."+k)
		}
	}
	for k := range out.Headers {
		if _, stored := c.Headers[k]; !stored {
			continue
		}
		if v, given := p.Headers[k]; !p.HeadersSet || !given || sameSecret(v, maskedWhole) {
			missing = append(missing, "config.headers."+k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(moved)
	slices.Sort(missing)
	return &Error{Code: EINVALID,
		Message: fmt.Sprintf("changing %s changes where this destination sends its secrets: send %s again in clear in the same request",
			strings.Join(moved, ", "), strings.Join(missing, ", ")),
		Metadata: map[string]any{"changed": moved, "secrets_required": missing}}
}

func (c DestinationConfig) validate(typ string, spec destinationType) error {
	for _, k := range spec.required {
		if strings.TrimSpace(c.Values[k]) == "" {
			return FieldError("config."+k, "is required for type %s", typ)
		}
	}
	for k, v := range c.Values {
		field := "config." + k
		if len(v) > MaxConfigValueLength {
			return FieldError(field, "must be at most %d characters", MaxConfigValueLength)
		}
		if urlConfigKeys[k] {
			// A secret URL (Sentry's DSN) is sealed and masked: it may hold credentials.
			if err := checkHTTPURL(field, v, secretConfigKeys[k]); err != nil {
				return err
			}
		}
	}
	if m := c.Values["method"]; typ == "webhook" && m != "POST" && m != "PUT" {
		return FieldError("config.method", "must be POST or PUT")
	}
	if r := c.Values["region"]; typ == "newrelic" && r != "us" && r != "eu" {
		return FieldError("config.region", "must be us or eu")
	}
	if typ == "clickhouse" || typ == "snowflake" {
		// Written into the SQL the delivery runs: plain identifiers only.
		for _, k := range []string{"database", "schema", "table", "warehouse"} {
			if v, ok := c.Values[k]; ok && !sqlIdentifier.MatchString(v) {
				return FieldError("config."+k, "must be an identifier: a letter or _, then letters, digits or _ (at most 255)")
			}
		}
	}
	if a, ok := c.Values["account"]; typ == "snowflake" && ok && !snowflakeAccount.MatchString(a) {
		return FieldError("config.account", "must be a Snowflake account identifier (letters, digits, - and _, as in myorg-myaccount)")
	}
	if t, ok := c.Values["pathTemplate"]; typ == "s3" && ok {
		if err := checkPathTemplate(t); err != nil {
			return err
		}
	}
	if len(c.Headers) > MaxHeaders {
		return FieldError("config.headers", "must have at most %d entries", MaxHeaders)
	}
	for k, v := range c.Headers {
		if !isHeaderName(k) {
			return FieldError("config.headers", "%q is not a valid header name", k)
		}
		if len(v) > MaxConfigValueLength || strings.ContainsAny(v, "\r\n\x00") {
			return FieldError("config.headers."+k, "must be at most %d characters without line breaks", MaxConfigValueLength)
		}
	}
	return nil
}

// sameSecret compares a value sent by a client with one derived from a
// secret in constant time, so that response timing tells nothing of it.
func sameSecret(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// checkHTTPURL refuses what is not an absolute http(s) URL with a valid
// port, and, unless the URL is itself a secret, one that holds
// credentials: a URL is stored and shown as given (it names where
// deliveries go), while a secret belongs in a field or header, which is
// sealed and shown masked.
func checkHTTPURL(field, s string, secret bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return FieldError(field, "must be an absolute http or https URL")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return FieldError(field, "has port %q, which is not from 1 to 65535", p)
		}
	}
	if u.User != nil && !secret {
		return FieldError(field, "must not hold credentials (user:password@): a URL is stored and shown as given; send them in a header (such as Authorization), which is stored sealed and shown masked")
	}
	return nil
}

var headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")

func isHeaderName(s string) bool { return headerNamePattern.MatchString(s) }

// Filter rule vocabularies.
var (
	filterFields = []string{"model", "provider", "session_id", "user_id", "api_key_name", "finish_reason",
		"input", "output", "total_cost", "total_tokens", "prompt_tokens", "completion_tokens"}
	filterOperators = []string{"equals", "not_equals", "contains", "not_contains", "regex", "starts_with",
		"ends_with", "gt", "lt", "gte", "lte", "exists", "not_exists"}
)

// Validate checks the filter rules and fills in defaults.
func (f *FilterRules) Validate() error {
	if f.Enabled == nil {
		t := true
		f.Enabled = &t
	}
	if f.Groups == nil {
		return FieldError("filter_rules.groups", "is required")
	}
	if len(f.Groups) > MaxFilterGroups {
		return FieldError("filter_rules.groups", "must have at most %d groups", MaxFilterGroups)
	}
	for i := range f.Groups {
		g := &f.Groups[i]
		field := fmt.Sprintf("filter_rules.groups[%d]", i)
		switch g.Logic {
		case "":
			g.Logic = "and"
		case "and", "or":
		default:
			return FieldError(field+".logic", "must be and or or")
		}
		if g.Rules == nil {
			return FieldError(field+".rules", "is required")
		}
		if len(g.Rules) > MaxConditionsPerGroup {
			return FieldError(field+".rules", "must have at most %d rules", MaxConditionsPerGroup)
		}
		for j, c := range g.Rules {
			if err := c.validate(fmt.Sprintf("%s.rules[%d]", field, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c Condition) validate(field string) error {
	if !slices.Contains(filterFields, c.Field) {
		return FieldError(field+".field", "must be one of %s", strings.Join(filterFields, ", "))
	}
	if !slices.Contains(filterOperators, c.Operator) {
		return FieldError(field+".operator", "must be one of %s", strings.Join(filterOperators, ", "))
	}
	switch v := c.Value.(type) {
	case nil:
		if c.Operator != "exists" && c.Operator != "not_exists" {
			return FieldError(field+".value", "is required for operator %s", c.Operator)
		}
	case string:
		if len(v) > MaxConfigValueLength {
			return FieldError(field+".value", "must be at most %d characters", MaxConfigValueLength)
		}
		if c.Operator == "regex" {
			if _, err := regexp.Compile(v); err != nil {
				return FieldError(field+".value", "is not a valid regular expression (RE2 syntax)")
			}
		}
	case float64:
	default:
		return FieldError(field+".value", "must be a string or a number")
	}
	return nil
}

// DestinationUpdate holds the fields of a destination create or update;
// unset fields stay unchanged. Config merges key by key.
type DestinationUpdate struct {
	Name                              Patch[string]
	Config                            *ConfigPatch
	Enabled                           Patch[bool]
	PrivacyMode                       Patch[bool]
	SamplingRate                      Patch[float64]
	APIKeyHashes                      Patch[[]string]
	FilterRules                       Patch[FilterRules]
	Regions                           Patch[[]string]
	BroadcastGenerationCost           Patch[bool]
	BroadcastGenerationIdentity       Patch[bool]
	BroadcastGenerationRequestContext Patch[bool]
}

// DestinationCreate holds the fields of a new destination.
type DestinationCreate struct {
	DestinationUpdate
	Type        string
	WorkspaceID string // UUID or slug; "" means the default workspace
}

// NewDestination returns a destination built from a create request,
// validated, with defaults: enabled, sampling rate 1, region global.
func NewDestination(c DestinationCreate) (*Destination, error) {
	if !c.Name.Set || c.Name.Null {
		return nil, FieldError("name", "is required")
	}
	if c.Type == "" {
		return nil, FieldError("type", "is required")
	}
	if _, ok := destinationTypes[c.Type]; !ok {
		return nil, FieldError("type", "must be one of %s", strings.Join(DestinationTypes(), ", "))
	}
	if c.Config == nil {
		return nil, FieldError("config", "is required")
	}
	d := &Destination{Type: c.Type, Enabled: true, SamplingRate: 1, Regions: []string{"global"}}
	return d, d.Apply(c.DestinationUpdate)
}

// Apply validates u and applies it to d.
func (d *Destination) Apply(u DestinationUpdate) error {
	for _, f := range []struct {
		name string
		null bool
	}{
		{"name", u.Name.Null}, {"enabled", u.Enabled.Null}, {"privacy_mode", u.PrivacyMode.Null},
		{"sampling_rate", u.SamplingRate.Null}, {"regions", u.Regions.Null},
		{"broadcast_generation_cost", u.BroadcastGenerationCost.Null},
		{"broadcast_generation_identity", u.BroadcastGenerationIdentity.Null},
		{"broadcast_generation_request_context", u.BroadcastGenerationRequestContext.Null},
	} {
		if f.null {
			return FieldError(f.name, "must not be null")
		}
	}
	if u.Name.Set {
		if err := validateName("name", u.Name.Value, MaxNameLength); err != nil {
			return err
		}
		d.Name = u.Name.Ptr()
	}
	if u.Config != nil {
		if d.SecretsUnreadable {
			if err := d.resupplied(*u.Config); err != nil {
				return err
			}
		}
		cfg, err := d.Config.Merge(d.Type, *u.Config)
		if err != nil {
			return err
		}
		d.Config, d.SecretsUnreadable = cfg, false
	}
	if r := u.SamplingRate; r.Set {
		if !(r.Value >= 0.0001 && r.Value <= 1) {
			return FieldError("sampling_rate", "must be between 0.0001 and 1")
		}
		d.SamplingRate = r.Value
	}
	if h := u.APIKeyHashes; h.Set {
		if len(h.Value) > MaxAPIKeyHashesPerDest {
			return FieldError("api_key_hashes", "must have at most %d entries", MaxAPIKeyHashesPerDest)
		}
		for i, s := range h.Value {
			if !IsKeyHash(s) {
				return FieldError(fmt.Sprintf("api_key_hashes[%d]", i), "must be a key hash (64 lowercase hex characters)")
			}
		}
		d.APIKeyHashes = h.Value
	}
	if f := u.FilterRules; f.Set {
		d.FilterRules = f.Ptr()
		if d.FilterRules != nil {
			if err := d.FilterRules.Validate(); err != nil {
				return err
			}
		}
	}
	if r := u.Regions; r.Set {
		if err := validateRegions("regions", r.Value); err != nil {
			return err
		}
		d.Regions = normalizeRegions(r.Value)
	}
	for _, b := range []struct {
		dst *bool
		p   Patch[bool]
	}{
		{&d.Enabled, u.Enabled}, {&d.PrivacyMode, u.PrivacyMode},
		{&d.BroadcastGenerationCost, u.BroadcastGenerationCost},
		{&d.BroadcastGenerationIdentity, u.BroadcastGenerationIdentity},
		{&d.BroadcastGenerationRequestContext, u.BroadcastGenerationRequestContext},
	} {
		if b.p.Set {
			*b.dst = b.p.Value
		}
	}
	return nil
}

// DestinationService manages observability destinations within one
// organization. Soft-deleted destinations are ENOTFOUND everywhere.
type DestinationService interface {
	// FindDestinations lists live destinations of a workspace ("" = default)
	// and their total. ENOTFOUND for an unknown workspace.
	FindDestinations(ctx context.Context, orgID, workspaceRef string, page Page) ([]*Destination, int, error)
	// CreateDestination creates a destination. EINVALID, ENOTFOUND,
	// ECONFLICT when the workspace has MaxDestinationsPerType of the type.
	CreateDestination(ctx context.Context, orgID string, create DestinationCreate) (*Destination, error)
	// FindDestination returns a live destination. ENOTFOUND.
	FindDestination(ctx context.Context, orgID, id string) (*Destination, error)
	// UpdateDestination updates a live destination. EINVALID, ENOTFOUND.
	UpdateDestination(ctx context.Context, orgID, id string, update DestinationUpdate) (*Destination, error)
	// DeleteDestination soft-deletes a live destination. ENOTFOUND.
	DeleteDestination(ctx context.Context, orgID, id string) error
}

// sqlIdentifier is an unquoted SQL identifier.
var sqlIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,254}$`)

// snowflakeAccount is an account identifier as its host name holds it.
var snowflakeAccount = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$`)

// PathTemplatePlaceholders are what an S3 destination's pathTemplate may
// name, in braces.
var PathTemplatePlaceholders = []string{"prefix", "date", "year", "month", "day", "hour", "workspace_id", "destination_id"}

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// checkPathTemplate refuses a pathTemplate that names an unknown
// placeholder, or that is empty or absolute.
func checkPathTemplate(t string) error {
	if strings.TrimSpace(t) == "" || strings.HasPrefix(t, "/") {
		return FieldError("config.pathTemplate", "must be a relative path such as {prefix}/{date}")
	}
	for _, m := range placeholder.FindAllString(t, -1) {
		if !slices.Contains(PathTemplatePlaceholders, m[1:len(m)-1]) {
			return FieldError("config.pathTemplate", "%s is not a placeholder (allowed: {%s})", m, strings.Join(PathTemplatePlaceholders, "}, {"))
		}
	}
	return nil
}
