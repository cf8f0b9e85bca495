package provider

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gatehouse"

	"go.yaml.in/yaml/v3"
)

// DefaultMaxCompletionTokens is the completion cap assumed for a model
// whose configuration sets none, when a request sets none either.
const DefaultMaxCompletionTokens = 4096

// maxTokensLimit bounds the integer settings, as the API bounds max_tokens.
const maxTokensLimit = 10_000_000

// LineError is a mistake in the providers file, at a line and column.
type LineError struct {
	File         string
	Line, Column int
	Field        string // the setting at fault, such as base_url; empty for a syntax error
	Message      string // what is wrong and how to fix it
}

func (e *LineError) Error() string {
	pos := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Column > 0 {
		pos += fmt.Sprintf(":%d", e.Column)
	}
	if e.Field == "" {
		return pos + ": " + e.Message
	}
	return pos + ": " + e.Field + ": " + e.Message
}

// LoadProviders reads the providers file at path and returns its catalog.
// API keys are read through getenv from the variables the file names; a
// key's value is never part of an error.
//
// The file is YAML:
//
//	providers:
//	  - id: local                      # [a-z0-9-]+, unique
//	    type: openai                   # optional, default openai: the API it speaks (ProviderTypes)
//	    base_url: http://127.0.0.1:11434/v1   # absolute http(s) URL of the API (DefaultBaseURLs for the other types)
//	    api_key_env: LOCAL_API_KEY     # optional: the variable holding the provider's key; if named it must be set
//	    byok: false                    # optional, default false: usage counts as byok_usage
//	    responses: false               # optional, default false: it serves the OpenAI Responses API too (POST /responses)
//	    timeout: 30m                   # optional, Go duration, default 30m: the whole call, to the answer's last byte
//	    first_byte_timeout: 10m        # optional, default 10m (at most timeout): until the answer begins
//	    models:
//	      - id: llama3.2               # the upstream's model name; clients address local/llama3.2
//	        name: Llama 3.2            # optional
//	        prompt_price: 0.15         # USD per million prompt tokens (decimal, exact; >= 0)
//	        completion_price: 0.60     # USD per million completion tokens
//	        max_completion_tokens: 4096   # optional, default 4096: the cap assumed when a request sets none
//	        context_length: 128000     # optional
//
// Providers and models may also describe themselves for the catalog
// (name, zdr, tokenizer, reasoning, cache prices, modalities...): see
// config_info.go and the README's "The providers file".
//
// Unknown settings are errors, so that a misspelt one is not silently
// ignored. Every error is a *LineError, or several joined with
// errors.Join in the order of the file (line, then column), naming the
// file, the line and column, and the setting; past maxErrors of them, a
// last line counts the rest.
func LoadProviders(path string, getenv func(string) string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read providers file: %w", err)
	}
	l := &loader{file: path, getenv: getenv}
	providers := l.parse(data)
	if len(l.errs) > 0 {
		return nil, l.err()
	}
	catalog, err := NewCatalog(providers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return catalog, nil
}

// loader walks the YAML node tree, which knows where each value was, and
// collects every mistake it finds.
type loader struct {
	file   string
	getenv func(string) string
	errs   []*LineError
}

// maxErrors bounds the mistakes reported at once.
const maxErrors = 20

func (l *loader) errorf(n *yaml.Node, field, format string, args ...any) {
	l.errs = append(l.errs, &LineError{File: l.file, Line: n.Line, Column: n.Column, Field: field, Message: fmt.Sprintf(format, args...)})
}

// err returns the mistakes found, the first maxErrors in the order of the
// file. The walk finds them in another order: a setting missing from a
// mapping is known, and reported at the mapping's first line, only after
// its contents.
func (l *loader) err() error {
	errs := slices.Clone(l.errs)
	slices.SortStableFunc(errs, func(a, b *LineError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	out := make([]error, 0, maxErrors+1)
	for _, e := range errs[:min(len(errs), maxErrors)] {
		out = append(out, e)
	}
	if n := len(errs) - maxErrors; n > 0 {
		out = append(out, fmt.Errorf("%s: and %d more mistakes after line %d", l.file, n, errs[maxErrors-1].Line))
	}
	return errors.Join(out...)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse decodes the document and walks it.
func (l *loader) parse(data []byte) []*Provider {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.errs = append(l.errs, &LineError{File: l.file, Line: 1, Message: "the file is empty: want a providers: list (see the README)"})
			return nil
		}
		l.syntaxError(data, err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		l.errs = append(l.errs, &LineError{File: l.file, Line: extra.Line, Column: extra.Column, Message: "the file holds more than one YAML document: remove the --- separator"})
		return nil
	}
	if len(doc.Content) == 0 {
		l.errs = append(l.errs, &LineError{File: l.file, Line: 1, Message: "the file is empty: want a providers: list (see the README)"})
		return nil
	}
	root := doc.Content[0]
	var providers []*Provider
	l.mapping(root, "the file", map[string]func(*yaml.Node){
		"providers": func(v *yaml.Node) { providers = l.providers(v) },
	}, "providers")
	return providers
}

// syntaxError reports a YAML parse error at its line. For a structural
// error the YAML library reports, counting from 0, the line where the
// enclosing list or mapping starts; a scanner error, its own line.
func (l *loader) syntaxError(data []byte, err error) {
	e := &LineError{File: l.file, Line: 1, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Message = m[2]
	}
	if strings.HasPrefix(e.Message, "did not find expected ") && parserProblemRE.MatchString(e.Message) {
		e.Line++
		e.Message = "invalid YAML in the block that starts on this line: " + e.Message
	} else {
		e.Message = "invalid YAML: " + e.Message
	}
	if bytes.Contains(data, []byte("\n\t")) || bytes.HasPrefix(data, []byte("\t")) {
		e.Message += " (indent with spaces: YAML does not allow tabs)"
	} else {
		e.Message += " (check the indentation and the colons)"
	}
	l.errs = append(l.errs, e)
}

// parserProblemRE matches the problems the YAML parser (not its scanner)
// reports.
var parserProblemRE = regexp.MustCompile(`expected (<document start>|node content|'-' indicator|key|',' or .)$`)

// mapping checks that n is a mapping, calls set for each known key with its
// value, and reports unknown, repeated and missing keys.
func (l *loader) mapping(n *yaml.Node, what string, set map[string]func(*yaml.Node), required ...string) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "", "%s must be a mapping of settings (key: value)", what)
		return
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if first, dup := seen[k.Value]; dup {
			l.errorf(k, k.Value, "is set twice (first on line %d): keep one", first.Line)
			continue
		}
		seen[k.Value] = k
		f, ok := set[k.Value]
		if !ok {
			l.errorf(k, k.Value, "unknown setting in %s: want one of %s", what, strings.Join(sortedKeys(set), ", "))
			continue
		}
		f(deref(v))
	}
	for _, r := range required {
		if _, ok := seen[r]; !ok {
			l.errorf(n, r, "is required in %s", what)
		}
	}
}

func (l *loader) providers(v *yaml.Node) []*Provider {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		l.errorf(v, "providers", "must be a non-empty list of providers, each starting with \"- id: ...\"")
		return nil
	}
	var out []*Provider
	ids := map[string]int{}
	for i, n := range v.Content {
		p := l.provider(deref(n), "provider "+entryName(n, i))
		if p.ID != "" {
			if line, dup := ids[p.ID]; dup {
				l.errorf(n, "id", "provider %q is defined twice (first on line %d): give each provider its own id", p.ID, line)
			}
			ids[p.ID] = deref(n).Line
		}
		out = append(out, p)
	}
	return out
}

var providerIDRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
var upperEnvNameRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

func (l *loader) provider(n *yaml.Node, what string) *Provider {
	p := &Provider{Timeout: DefaultProviderTimeout, FirstByteTimeout: DefaultFirstByteTimeout}
	var modelsNode, firstByte *yaml.Node
	l.mapping(n, what, withSettings(l.providerInfoSettings(&p.ProviderInfo), map[string]func(*yaml.Node){
		"id": func(v *yaml.Node) {
			if s, ok := l.str(v, "id"); ok && !providerIDRE.MatchString(s) {
				l.errorf(v, "id", "must be 1 to 64 lowercase letters, digits or dashes, such as openai or local-vllm")
			} else {
				p.ID = s
			}
		},
		"type":        func(v *yaml.Node) { p.Type = l.oneOf(v, "type", ProviderTypes) },
		"base_url":    func(v *yaml.Node) { p.BaseURL = l.baseURL(v) },
		"api_key_env": func(v *yaml.Node) { p.APIKeyEnv, p.APIKey = l.apiKey(v) },
		"byok":        func(v *yaml.Node) { p.BYOK = l.boolean(v, "byok") },
		"responses":   func(v *yaml.Node) { p.Responses = l.boolean(v, "responses") },
		"timeout":     func(v *yaml.Node) { p.Timeout = l.duration(v, "timeout") },
		"first_byte_timeout": func(v *yaml.Node) {
			p.FirstByteTimeout = l.duration(v, "first_byte_timeout")
			firstByte = v
		},
		"models": func(v *yaml.Node) { modelsNode = v },
	}), "id", "models")
	if p.BaseURL == "" && deref(n).Kind == yaml.MappingNode && !hasKey(deref(n), "base_url") {
		if p.BaseURL = DefaultBaseURLs[p.Type]; p.BaseURL == "" {
			l.errorf(deref(n), "base_url", "is required in %s (a provider of type openai, the default, has none)", what)
		}
	}
	if p.Responses && !p.OpenAICompatible() {
		l.errorf(deref(n), "responses", "is for OpenAI-compatible providers: Gatehouse serves the Responses API from a provider of type %s by translating it to its API, without this setting; leave responses out", p.Type)
	}
	if firstByte != nil && p.FirstByteTimeout > p.Timeout {
		l.errorf(firstByte, "first_byte_timeout", "is %s, longer than the provider's timeout of %s, which bounds the whole call: shorten it, or lengthen timeout", p.FirstByteTimeout, p.Timeout)
	}
	if modelsNode != nil {
		p.Models = l.models(modelsNode, p.ID)
	}
	return p
}

// hasKey reports whether a mapping node sets key.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func (l *loader) baseURL(v *yaml.Node) string {
	s, ok := l.str(v, "base_url")
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		l.errorf(v, "base_url", "must be an absolute http or https URL of an OpenAI-compatible API, such as http://127.0.0.1:11434/v1")
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(u.Path, "/chat/completions") || strings.HasSuffix(u.Path, "/responses"):
		l.errorf(v, "base_url", "must be the API's base (such as https://api.openai.com/v1), without a query, a fragment, /chat/completions or /responses, which Gatehouse appends")
	default:
		return s
	}
	return ""
}

// apiKey returns the variable's name and the key it holds. The name is
// echoed in errors only when it looks like a variable's name, in case a
// key was pasted in its place.
func (l *loader) apiKey(v *yaml.Node) (name, key string) {
	name, ok := l.str(v, "api_key_env")
	if !ok {
		return "", ""
	}
	if !envNameRE.MatchString(name) {
		l.errorf(v, "api_key_env", "must be the name of the environment variable holding the key (letters, digits and _, such as OPENAI_API_KEY), not the key itself")
		return "", ""
	}
	key = l.getenv(name)
	if key == "" {
		shown := "named here"
		if upperEnvNameRE.MatchString(name) {
			shown = name
		}
		l.errorf(v, "api_key_env", "the environment variable %s is not set or empty: set it to the provider's API key, or remove api_key_env for a provider that needs none", shown)
	}
	return name, key
}

func (l *loader) models(v *yaml.Node, prov string) []*Model {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		l.errorf(v, "models", "must be a non-empty list of models, each starting with \"- id: ...\"")
		return nil
	}
	var out []*Model
	ids := map[string]int{}
	for i, n := range v.Content {
		m := l.model(deref(n), "model "+entryName(n, i)+" of provider "+prov)
		if m.ID != "" {
			if line, dup := ids[m.ID]; dup {
				l.errorf(n, "id", "model %q is defined twice in provider %s (first on line %d)", m.ID, prov, line)
			}
			ids[m.ID] = deref(n).Line
		}
		out = append(out, m)
	}
	return out
}

func (l *loader) model(n *yaml.Node, what string) *Model {
	m := &Model{MaxCompletionTokens: DefaultMaxCompletionTokens}
	completionPriced := false
	l.mapping(n, what, withSettings(l.modelInfoSettings(&m.ModelInfo), map[string]func(*yaml.Node){
		"id": func(v *yaml.Node) {
			s, ok := l.str(v, "id")
			if ok && (s == "" || len(s) > 200 || strings.IndexFunc(s, isSpaceOrControl) >= 0) {
				l.errorf(v, "id", "must be the upstream's model name (1 to 200 characters, no spaces), such as gpt-4o-mini")
				return
			}
			m.ID = s
		},
		"slug":         func(v *yaml.Node) { m.Serves = l.slug(v) },
		"name":         func(v *yaml.Node) { m.Name, _ = l.str(v, "name") },
		"prompt_price": func(v *yaml.Node) { m.PromptPrice = l.price(v, "prompt_price") },
		"completion_price": func(v *yaml.Node) {
			m.CompletionPrice, completionPriced = l.price(v, "completion_price"), true
		},
		"max_completion_tokens": func(v *yaml.Node) { m.MaxCompletionTokens = l.positive(v, "max_completion_tokens") },
		"timeout":               func(v *yaml.Node) { m.Timeout = l.duration(v, "timeout") },
		"first_byte_timeout":    func(v *yaml.Node) { m.FirstByteTimeout = l.duration(v, "first_byte_timeout") },
		"context_length":        func(v *yaml.Node) { m.ContextLength = l.positive(v, "context_length") },
	}), "id", "prompt_price")
	// An embedding model completes nothing: only its prompt is priced.
	if !completionPriced && deref(n).Kind == yaml.MappingNode && !slices.Equal(m.OutputModalities, []string{"embeddings"}) {
		l.errorf(deref(n), "completion_price", "is required in %s (only a model whose output_modalities are [embeddings] may leave it out)", what)
	}
	return m
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// slugRE is what a model's slug looks like: author/name, as OpenRouter
// names models (meta-llama/llama-3.1-70b-instruct, openai/gpt-4o:extended).
var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// slug reads the slug of the model an entry serves.
func (l *loader) slug(v *yaml.Node) string {
	s, ok := l.str(v, "slug")
	if ok && (!slugRE.MatchString(s) || len(s) > 200) {
		l.errorf(v, "slug", "must be the model's name as OpenRouter writes it, author/name (lower-case author; letters, digits, . _ - and : in the name; at most 200 characters), such as meta-llama/llama-3.1-70b-instruct")
		return ""
	}
	return s
}

// str returns a scalar's text; a list or mapping is an error.
func (l *loader) str(v *yaml.Node, field string) (string, bool) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		l.errorf(v, field, "has no value: give it one or remove the line")
		return "", false
	case v.Kind != yaml.ScalarNode:
		l.errorf(v, field, "must be a single value, not %s", kindName(v))
		return "", false
	}
	return v.Value, true
}

// price parses a price from the scalar's text, exactly: 0.15 is 150000000
// nano-dollars, never a float's approximation.
func (l *loader) price(v *yaml.Node, field string) gatehouse.Money {
	s, ok := l.str(v, field)
	if !ok {
		return 0
	}
	s = strings.TrimPrefix(s, "+")
	if strings.HasPrefix(s, ".") {
		s = "0" + s
	}
	m, err := gatehouse.ParseMoney(s)
	switch {
	case err != nil:
		l.errorf(v, field, "must be a decimal number of US dollars per million tokens, such as 0.15 (at most 1000000000)")
	case m < 0:
		l.errorf(v, field, "must not be negative (0 for a free model)")
	default:
		return m
	}
	return 0
}

// positive parses a positive whole number.
func (l *loader) positive(v *yaml.Node, field string) int {
	s, ok := l.str(v, field)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxTokensLimit {
		l.errorf(v, field, "must be a whole number of tokens from 1 to %d", maxTokensLimit)
		return 0
	}
	return n
}

func (l *loader) boolean(v *yaml.Node, field string) bool {
	s, ok := l.str(v, field)
	if !ok {
		return false
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	}
	l.errorf(v, field, "must be true or false")
	return false
}

func (l *loader) duration(v *yaml.Node, field string) time.Duration {
	s, ok := l.str(v, field)
	if !ok {
		return DefaultProviderTimeout
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(v, field, "must be a positive duration with its unit, such as 90s or 5m")
		return DefaultProviderTimeout
	}
	return d
}

// entryName names the i-th entry of a list by its id, or else by its
// position, for errors about the entry as a whole.
func entryName(n *yaml.Node, i int) string {
	n = deref(n)
	for j := 0; n.Kind == yaml.MappingNode && j+1 < len(n.Content); j += 2 {
		if k, v := n.Content[j], deref(n.Content[j+1]); k.Value == "id" && v.Kind == yaml.ScalarNode && v.Value != "" {
			return strconv.Quote(v.Value)
		}
	}
	return fmt.Sprintf("#%d", i+1)
}

// deref follows a YAML alias (*name) to its anchored value.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a value"
}

func sortedKeys(m map[string]func(*yaml.Node)) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
