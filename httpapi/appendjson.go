package httpapi

import (
	"strconv"
	"time"
	"unicode/utf8"

	"gatehouse"
)

// The answers of the reads served most (a key, the current key, a guardrail
// and pages of guardrails) are appended straight from the domain values,
// without the reflection of encoding/json nor the strings of the wire
// structs: a page of 100 guardrails took 90 µs through encoding/json, and
// its wire structs 39 µs more. Each writes exactly what encoding/json
// writes for the wire struct of wire.go (HTML escaping off, as writeJSON
// sets it); TestAppendedJSONMatchesWireStructs checks that over random
// values, so a field added to a wire struct without its appender fails it.

// bodyAppender is a response body that appends its own JSON.
type bodyAppender interface {
	appendBody(b []byte) []byte
}

// appended is a body written by a function of appendjson.go.
type appended func(b []byte) []byte

func (f appended) appendBody(b []byte) []byte { return f(b) }

// dataOf is the body {"data": v}, v appended by appendValue.
func dataOf(appendValue func(b []byte) []byte) appended {
	return func(b []byte) []byte {
		return append(appendValue(append(b, `{"data":`...)), '}')
	}
}

// listOf is the body of a page of items and the total, as listJSON.
func listOf[T any](items []T, total int, appendItem func(b []byte, item T) []byte) appended {
	return func(b []byte) []byte {
		b = append(b, `{"data":[`...)
		for i, item := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, item)
		}
		b = strconv.AppendInt(append(b, `],"total_count":`...), int64(total), 10)
		return append(b, '}')
	}
}

// appendKey appends a key as keyJSON shows it at now.
func appendKey(b []byte, k *gatehouse.Key, now time.Time) []byte {
	b = appendString(append(b, `{"hash":`...), k.Hash)
	b = appendString(append(b, `,"name":`...), k.Name)
	b = appendString(append(b, `,"label":`...), k.Name)
	b = strconv.AppendBool(append(b, `,"disabled":`...), k.Disabled)
	b = appendLimitAndUsage(b, k, now)
	b = appendTime(append(b, `,"created_at":`...), k.CreatedAt)
	b = appendTimePtr(append(b, `,"updated_at":`...), k.UpdatedAt)
	b = appendTimePtr(append(b, `,"expires_at":`...), k.ExpiresAt)
	b = appendStringPtr(append(b, `,"creator_user_id":`...), k.CreatorUserID)
	b = appendString(append(b, `,"workspace_id":`...), k.WorkspaceID)
	b = appendStringPtr(append(b, `,"external_user":`...), k.ExternalUser)
	return append(b, '}')
}

// appendCurrentKey appends the key that authenticated as currentKeyJSON
// shows it at now.
func appendCurrentKey(b []byte, k *gatehouse.Key, now time.Time) []byte {
	b = appendString(append(b, `{"label":`...), k.Name)
	b = appendLimitAndUsage(b, k, now)
	b = appendStringPtr(append(b, `,"creator_user_id":`...), k.CreatorUserID)
	b = appendTimePtr(append(b, `,"expires_at":`...), k.ExpiresAt)
	b = strconv.AppendBool(append(b, `,"is_management_key":`...), k.Management)
	b = strconv.AppendBool(append(b, `,"is_provisioning_key":`...), k.Management)
	b = appendString(append(b, `,"is_free_tier":false,"organization_id":`...), k.OrganizationID)
	if k.Management {
		b = append(b, `,"workspace_id":null`...)
	} else {
		b = appendString(append(b, `,"workspace_id":`...), k.WorkspaceID)
	}
	return append(b, `,"allowed_data_regions":["global","europe","us"],`+
		`"free_model_daily_requests":{"limit":0,"remaining":0,"used":0},`+
		`"rate_limit":{"requests":-1,"interval":"10s","note":"deprecated"}}`...)
}

// appendLimitAndUsage appends the fields of limitJSON and usageJSON, each
// after a comma.
func appendLimitAndUsage(b []byte, k *gatehouse.Key, now time.Time) []byte {
	b = appendMoneyPtr(append(b, `,"limit":`...), k.Limit)
	if k.Limit == nil {
		b = append(b, `,"limit_remaining":null`...)
	} else {
		b = (*k.LimitRemaining(now)).AppendDecimal(append(b, `,"limit_remaining":`...))
	}
	b = appendInterval(append(b, `,"limit_reset":`...), k.LimitReset)
	b = strconv.AppendBool(append(b, `,"include_byok_in_limit":`...), k.IncludeBYOKInLimit)
	u, y := k.Usage.At(now), k.BYOKUsage.At(now)
	b = u.Total.AppendDecimal(append(b, `,"usage":`...))
	b = u.Daily.AppendDecimal(append(b, `,"usage_daily":`...))
	b = u.Weekly.AppendDecimal(append(b, `,"usage_weekly":`...))
	b = u.Monthly.AppendDecimal(append(b, `,"usage_monthly":`...))
	b = y.Total.AppendDecimal(append(b, `,"byok_usage":`...))
	b = y.Daily.AppendDecimal(append(b, `,"byok_usage_daily":`...))
	b = y.Weekly.AppendDecimal(append(b, `,"byok_usage_weekly":`...))
	return y.Monthly.AppendDecimal(append(b, `,"byok_usage_monthly":`...))
}

// appendGuardrail appends a guardrail as guardrailJSON shows it.
func appendGuardrail(b []byte, g *gatehouse.Guardrail) []byte {
	b = appendString(append(b, `{"id":`...), g.ID)
	b = appendString(append(b, `,"name":`...), g.Name)
	b = appendStringPtr(append(b, `,"description":`...), g.Description)
	b = appendString(append(b, `,"workspace_id":`...), g.WorkspaceID)
	b = appendStrings(append(b, `,"allowed_models":`...), g.AllowedModels)
	b = appendStrings(append(b, `,"allowed_providers":`...), g.AllowedProviders)
	b = appendStrings(append(b, `,"ignored_models":`...), g.IgnoredModels)
	b = appendStrings(append(b, `,"ignored_providers":`...), g.IgnoredProviders)
	b = appendMoneyPtr(append(b, `,"limit_usd":`...), g.LimitUSD)
	b = appendInterval(append(b, `,"reset_interval":`...), g.ResetInterval)
	b = strconv.AppendBool(append(b, `,"include_byok_in_budgets":`...), g.IncludeBYOKInBudgets)
	b = appendBoolPtr(append(b, `,"enforce_zdr":`...), g.EnforceZDR)
	b = appendBoolPtr(append(b, `,"enforce_zdr_anthropic":`...), g.EnforceZDRAnthropic)
	b = appendBoolPtr(append(b, `,"enforce_zdr_openai":`...), g.EnforceZDROpenAI)
	b = appendBoolPtr(append(b, `,"enforce_zdr_google":`...), g.EnforceZDRGoogle)
	b = appendBoolPtr(append(b, `,"enforce_zdr_xai":`...), g.EnforceZDRXAI)
	b = appendBoolPtr(append(b, `,"enforce_zdr_other":`...), g.EnforceZDROther)
	b = appendBoolPtr(append(b, `,"enable_free_model_publication":`...), g.EnableFreeModelPublication)
	b = appendBoolPtr(append(b, `,"enable_free_model_training":`...), g.EnableFreeModelTraining)
	b = appendBoolPtr(append(b, `,"enable_paid_model_training":`...), g.EnablePaidModelTraining)
	b = appendStrings(append(b, `,"allowed_data_regions":`...), g.AllowedDataRegions)
	b = appendContentFilters(append(b, `,"content_filters":`...), g.ContentFilters)
	b = appendBuiltins(append(b, `,"content_filter_builtins":`...), g.ContentFilterBuiltins)
	b = appendTime(append(b, `,"created_at":`...), g.CreatedAt)
	b = appendTimePtr(append(b, `,"updated_at":`...), g.UpdatedAt)
	return append(b, '}')
}

func appendContentFilters(b []byte, fs []gatehouse.ContentFilter) []byte {
	if fs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(append(b, `{"pattern":`...), f.Pattern)
		b = appendString(append(b, `,"action":`...), f.Action)
		if f.Label != nil {
			b = appendString(append(b, `,"label":`...), *f.Label)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendBuiltins(b []byte, bs []gatehouse.ContentFilterBuiltin) []byte {
	if bs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, f := range bs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(append(b, `{"slug":`...), f.Slug)
		b = appendString(append(b, `,"action":`...), f.Action)
		if f.ScanScope != nil {
			b = appendString(append(b, `,"scan_scope":`...), *f.ScanScope)
		}
		if f.Label != "" {
			b = appendString(append(b, `,"label":`...), f.Label)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendTime appends a time as jsonTime shows it (jsonTimeLayout, which
// needs no escaping), digit by digit: time.AppendFormat, which interprets
// the layout every time, was half the cost of a page of guardrails.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 { // not four digits: as the layout formats it
		return append(t.AppendFormat(append(b, '"'), jsonTimeLayout), '"')
	}
	hour, minute, second := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(b, '"', digit(year/1000), digit(year/100), digit(year/10), digit(year), '-',
		digit(int(month)/10), digit(int(month)), '-', digit(day/10), digit(day), 'T',
		digit(hour/10), digit(hour), ':', digit(minute/10), digit(minute), ':', digit(second/10), digit(second), '.',
		digit(ms/100), digit(ms/10), digit(ms), 'Z', '"')
}

// digit returns the last decimal digit of n >= 0.
func digit(n int) byte { return byte('0' + n%10) }

func appendTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

func appendMoneyPtr(b []byte, m *gatehouse.Money) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	return m.AppendDecimal(b)
}

// appendInterval appends a reset interval as intervalPtr shows it.
func appendInterval(b []byte, i gatehouse.Interval) []byte {
	if i == gatehouse.NoReset {
		return append(b, "null"...)
	}
	return appendString(b, string(i))
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

func appendBoolPtr(b []byte, v *bool) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendBool(b, *v)
}

func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string exactly as encoding/json does
// without HTML escaping: ", \ and control characters escaped (\b, \f, \n,
// \r, \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
