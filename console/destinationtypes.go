package console

import (
	"slices"
	"strings"

	"gatehouse"
)

// What the destination pages show of the 17 types: the labels of the
// configuration keys, and the keys that take one of a few values. A type's
// name for people, which keys it has, which are required, their defaults
// and which are secrets is the domain's (gatehouse.DestinationTypeLabel,
// gatehouse.DestinationConfigKeys, gatehouse.IsSecretConfigKey).

// configLabels label the configuration keys.
var configLabels = map[string]string{
	"apiKey": "API key", "spaceKey": "Space key", "modelId": "Model id", "baseUrl": "Base URL", "projectId": "Project id",
	"host": "Host URL", "database": "Database", "username": "User name", "password": "Password", "table": "Table",
	"mlApp": "ML app", "url": "URL", "instanceId": "Instance id", "publicKey": "Public key", "secretKey": "Secret key",
	"endpoint": "Endpoint URL", "project": "Project", "workspaceId": "Workspace id", "licenseKey": "License key",
	"region": "Region", "projectName": "Project name", "workspace": "Workspace", "accessKeyId": "Access key id",
	"secretAccessKey": "Secret access key", "bucketName": "Bucket", "sessionToken": "Session token", "prefix": "Prefix",
	"pathTemplate": "Path template", "dsn": "DSN", "otlpEndpoint": "OTLP endpoint URL", "account": "Account",
	"token": "Token", "schema": "Schema", "warehouse": "Warehouse", "entity": "Entity", "method": "Method",
}

// configChoices are the values of the keys that take one of a few.
var configChoices = map[string][]string{"webhook.method": {"POST", "PUT"}, "newrelic.region": {"us", "eu"}}

// destinationTypeName names a type for people.
func destinationTypeName(typ string) string {
	if n := gatehouse.DestinationTypeLabel(typ); n != "" {
		return n
	}
	return typ
}

// destinationTypeOptions are the types, for a select.
func destinationTypeOptions(selected string) []option {
	var out []option
	for _, t := range gatehouse.DestinationTypes() {
		out = append(out, option{Value: t, Label: destinationTypeName(t), Selected: t == selected})
	}
	slices.SortFunc(out, func(a, b option) int { return strings.Compare(strings.ToLower(a.Label), strings.ToLower(b.Label)) })
	return out
}

// configField is a configuration key of a type, as a form shows it.
type configField struct {
	Key, Label string
	Required   bool
	Secret     bool
	Default    string
	Choices    []option
	// Stored is, on an edit form, how the stored secret reads masked
	// ("" for none): the secret itself never reaches a page.
	Stored string
	// Hint says what the field takes, or what leaving it empty does.
	Hint string
}

// Name is the form field's name.
func (c configField) Name() string { return "config." + c.Key }

// configFields are the configuration keys of a type, required first; d,
// when set, is the destination whose stored secrets they mention (masked).
func configFields(typ string, d *gatehouse.Destination) []configField {
	required, optional, defaults, ok := gatehouse.DestinationConfigKeys(typ)
	if !ok {
		return nil
	}
	var shown map[string]string
	if d != nil {
		shown = d.ShownConfig().Values
	}
	var out []configField
	for i, k := range slices.Concat(required, optional) {
		c := configField{Key: k, Label: configLabels[k], Required: i < len(required), Secret: gatehouse.IsSecretConfigKey(k),
			Default: defaults[k], Choices: plainOptions(configChoices[typ+"."+k])}
		if c.Label == "" {
			c.Label = k
		}
		if c.Secret {
			c.Stored = shown[k]
		}
		c.Hint = c.hint(d != nil)
		out = append(out, c)
	}
	return out
}

// hint says what the field takes: for a secret of an existing destination
// (editing), how the stored one reads masked and that leaving the field
// empty keeps it.
func (c configField) hint(editing bool) string {
	var parts []string
	switch {
	case c.Secret && c.Stored != "":
		parts = append(parts, "Stored: "+c.Stored+". Empty: keep it")
	case c.Secret && editing:
		parts = append(parts, "None stored")
	case c.Default != "":
		parts = append(parts, "Empty: "+c.Default)
	}
	if gatehouse.IsAddressConfigKey(c.Key) && !c.Secret {
		parts = append(parts, "an http:// or https:// address")
	}
	if len(parts) == 0 {
		return ""
	}
	h := strings.Join(parts, "; ")
	return strings.ToUpper(h[:1]) + h[1:]
}
