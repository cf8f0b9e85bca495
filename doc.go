// Package gatehouse is the domain of the Gatehouse management plane: the
// resources an organization governs (API keys, OAuth codes, workspaces and
// their members, guardrails, observability destinations), their validation
// rules, usage-period arithmetic, and the Store interface that the storage
// engines in the sqlite and postgres packages implement.
//
// The package imports neither net/http nor database/sql: data flows one way,
// from cmd/gatehouse through httpapi to a Store.
package gatehouse
