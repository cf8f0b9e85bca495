package seed

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The usage ledger of a seeded organization: Options.Generations calls,
// evenly spaced over the Options.GenerationDays days before the seeding,
// oldest first (as the ledger grows). Half of them come from 20 hot keys,
// the rest from every key; each goes to one of a dozen models of five
// providers, with the prompt and completion sizes, costs, latencies and
// finish reasons of a busy gateway (a tenth BYOK, a fiftieth cut short).

// seedModel is a model the seeded calls go to, with its prices in dollars
// per million tokens; weight is its share of the calls (out of 100).
type seedModel struct {
	provider, model string
	prompt, compl   float64
	weight          int
}

var seedModels = []seedModel{
	{"openai", "openai/gpt-4o-mini", 0.15, 0.6, 25},
	{"openai", "openai/gpt-4o", 2.5, 10, 12},
	{"openai", "openai/o3-mini", 1.1, 4.4, 5},
	{"anthropic", "anthropic/claude-sonnet-4", 3, 15, 14},
	{"anthropic", "anthropic/claude-haiku-3.5", 0.8, 4, 10},
	{"google", "google/gemini-2.5-flash", 0.3, 2.5, 12},
	{"google", "google/gemini-2.5-pro", 1.25, 10, 5},
	{"mistral", "mistral/mistral-large", 2, 6, 4},
	{"mistral", "mistral/mistral-small", 0.2, 0.6, 4},
	{"local", "local/llama3.2", 0, 0, 5},
	{"local", "local/qwen2.5-coder", 0, 0, 2},
	{"local", "local/phi4", 0, 0, 2},
}

// seedModelSlots maps a number under 100 to a model, by weight.
var seedModelSlots = func() []int {
	var slots []int
	for i, m := range seedModels {
		for range m.weight {
			slots = append(slots, i)
		}
	}
	return slots
}()

// hotKeys is how many keys make half of the calls.
const hotKeys = 20

// mix is splitmix64: a bijection of uint64 whose outputs look random.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// generationTable writes the ledger of the organization.
func (p *plan) generationTable() table {
	n, keys := p.opts.Generations, p.opts.Keys
	span := int64(p.opts.GenerationDays) * int64(24*time.Hour/time.Millisecond)
	start := p.now - span
	seed := binary.BigEndian.Uint64(p.secret[8:16])
	hashes, workspaces := make([]string, keys), make([]string, keys)
	for k := range keys {
		hashes[k], workspaces[k] = p.keyHash(k), p.workspaceID(p.spread(k, p.keysDefault))
	}
	stop, length := "stop", "length"
	return table{name: "generations", n: n, deferIndexes: n >= 100_000,
		cols: []string{"id", "organization_id", "workspace_id", "key_hash", "model", "provider", "upstream_id",
			"prompt_tokens", "completion_tokens", "cost", "byok", "streamed", "finish_reason", "status",
			"latency_ms", "generation_ms", "session_id", "external_user", "created_at"},
		row: func(i int, d []any) bool {
			h := mix(seed ^ uint64(i))
			k := int(h>>8) % keys
			if h&1 == 0 {
				k = int(h>>8) % min(hotKeys, keys)
			}
			m := seedModels[seedModelSlots[(h>>20)%uint64(len(seedModelSlots))]]
			prompt, compl := int64(50+(h>>28)%4000), int64(10+(h>>40)%1000)
			cost := int64((float64(prompt)*m.prompt + float64(compl)*m.compl) * 1000) // nano-dollars
			byok, status, finish := (h>>50)%10 == 0, "completed", any(stop)
			switch (h >> 54) % 50 {
			case 0:
				status, finish = "partial", nil
			case 1, 2, 3, 4:
				finish = length
			}
			var external any
			if (h>>56)%5 == 0 {
				external = fmt.Sprintf("end-user-%d", (h>>8)%500)
			}
			latency := int64(80 + (h>>12)%2500)
			// Ids in the order of i after a prefix of the run: the
			// primary key's index is written in order, not at random as by
			// the server (the reads timed do not use it).
			fill(d, fmt.Sprintf("gen-%x%016x", p.secret[:4], i), p.orgID, workspaces[k], hashes[k], m.model, m.provider,
				fmt.Sprintf("chatcmpl-%x", h>>16), prompt, compl, cost, byok, h&2 == 0, finish, status,
				latency, latency+compl*20, nil, external, start+int64(i)*span/int64(n))
			return true
		}}
}
