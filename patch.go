package gatehouse

import "encoding/json"

// Patch is one field of a partial update. A field absent from the request
// leaves Set false (unchanged); a field present as JSON null sets Set and
// Null (clear it); any other value sets Set and Value.
type Patch[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Val returns a Patch that sets v.
func Val[T any](v T) Patch[T] { return Patch[T]{Set: true, Value: v} }

// Null returns a Patch that clears the field.
func Null[T any]() Patch[T] { return Patch[T]{Set: true, Null: true} }

// UnmarshalJSON records that the field was present, and whether it was null.
func (p *Patch[T]) UnmarshalJSON(data []byte) error {
	p.Set = true
	if string(data) == "null" {
		var zero T
		p.Null, p.Value = true, zero
		return nil
	}
	p.Null = false
	return json.Unmarshal(data, &p.Value)
}

// Ptr returns nil for a null Patch and a pointer to its value otherwise.
// It is meant for a Patch that is Set.
func (p Patch[T]) Ptr() *T {
	if p.Null {
		return nil
	}
	v := p.Value
	return &v
}

// Page selects a window of a list ordered by creation time, then id.
type Page struct {
	Offset int // rows to skip, >= 0
	Limit  int // rows to return, 1..MaxPageSize
}

// Page bounds shared by every list.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)
