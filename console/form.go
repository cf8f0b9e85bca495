package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"gatehouse"
)

// maxFormBytes bounds a form's body.
const maxFormBytes = 64 << 10

// form is a submitted form for a page to show again: the values as typed,
// an error next to each field that has one, and an error of the whole form.
type form struct {
	Values url.Values
	Errors map[string]string
	Error  string
}

// emptyForm is a form not filled in yet.
func emptyForm() *form { return &form{Values: url.Values{}, Errors: map[string]string{}} }

// newForm reads the form of a POST (at most maxFormBytes), or starts an
// empty one. A form that holds text that is not UTF-8, or a NUL, is
// refused (EINVALID) before any of it reaches the store.
func newForm(w http.ResponseWriter, r *http.Request) (*form, error) {
	f := emptyForm()
	if r.Method != http.MethodPost {
		return f, nil
	}
	if err := parseForm(w, r); err != nil {
		return nil, err
	}
	for name, vs := range r.PostForm { // what no text column holds, and no browser sends
		if !gatehouse.IsPlainText(name) || slices.ContainsFunc(vs, func(v string) bool { return !gatehouse.IsPlainText(v) }) {
			return nil, gatehouse.Errorf(gatehouse.EINVALID, "The form holds text that is not UTF-8, or a NUL character.")
		}
	}
	f.Values = r.PostForm
	return f, nil
}

// parseForm reads the body of a form into r.PostForm, at most
// maxFormBytes of it; a second call reads nothing more.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	if r.PostForm != nil {
		return nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			return gatehouse.Errorf(gatehouse.ETOOLARGE, "The form is larger than %d KiB.", maxFormBytes>>10)
		}
		return gatehouse.Errorf(gatehouse.EINVALID, "The form could not be read.")
	}
	return nil
}

// get returns a field's value without surrounding spaces.
func (f *form) get(name string) string { return strings.TrimSpace(f.Values.Get(name)) }

// withError records err on the form: an EINVALID error that names a field
// (the domain's FieldError) goes next to that field, as the domain says
// it (an error of an entry, such as tools[2] or config.headers.X, next to
// the field of the list, naming the entry); any other EINVALID or
// ECONFLICT error is the form's. Other errors are not the form's to show:
// withError returns them.
func (f *form) withError(err error, fields ...string) error {
	e, ok := errors.AsType[*gatehouse.Error](err)
	if !ok || e.Code != gatehouse.EINVALID && e.Code != gatehouse.ECONFLICT {
		return err
	}
	name, _ := e.Metadata["field"].(string)
	for _, field := range fields {
		switch {
		case field == name:
			f.Errors[name] = strings.TrimPrefix(e.Message, name+": ")
			return nil
		case strings.HasPrefix(name, field+"[") || strings.HasPrefix(name, field+"."): // an entry of a list or map
			f.Errors[field] = e.Message
			return nil
		}
	}
	f.Error = e.Message
	return nil
}

// money reads an optional amount of US dollars: "" is nil.
func (f *form) money(name string) (*gatehouse.Money, error) {
	v := strings.TrimPrefix(f.get(name), "$")
	if v == "" {
		return nil, nil
	}
	m, err := gatehouse.ParseMoney(strings.ReplaceAll(v, ",", ""))
	if err != nil || strings.ContainsAny(v, "eE") {
		return nil, gatehouse.FieldError(name, "must be an amount of US dollars, such as 25 or 0.50")
	}
	return &m, nil
}

// date reads an optional date (YYYY-MM-DD, as <input type=date> sends it)
// as the end of that UTC day: a key that expires on a date works all of it.
func (f *form) date(name string) (*time.Time, error) {
	v := f.get(name)
	if v == "" {
		return nil, nil
	}
	d, err := time.Parse("2006-01-02", v)
	if err != nil {
		return nil, gatehouse.FieldError(name, "must be a date, such as 2030-12-31")
	}
	end := d.AddDate(0, 0, 1)
	return &end, nil
}

// interval reads a limit reset: "" (never), daily, weekly or monthly.
func (f *form) interval(name string) (gatehouse.Interval, error) {
	i, ok := gatehouse.ParseInterval(f.get(name))
	if !ok {
		return "", gatehouse.FieldError(name, "must be never, daily, weekly or monthly")
	}
	return i, nil
}

// field is what the "field" template shows: a labelled input with its
// value, its hint and its error.
type field struct {
	Name, Label, Type, Value, Error, Hint string
	// Autocomplete is the input's autocomplete attribute, "" for none.
	Autocomplete string
	Required     bool
	Options      []option
}

// autocomplete is what browsers may fill in, by field name; secrets that
// are not passwords (a key) are never remembered.
var autocomplete = map[string]string{"email": "email", "password": "current-password", "new_password": "new-password", "key": "off"}

// newField returns the field name of f (nil: an empty form), labelled,
// of an input type ("text", "password", "date", "select"...). Template
// use: {{template "field" (field .Page.Form "name" "Name" "text")}}.
func newField(f *form, name, label, typ string) field {
	fd := field{Name: name, Label: label, Type: typ, Autocomplete: autocomplete[name]}
	if f != nil {
		fd.Error = f.Errors[name]
		if typ != "password" { // a secret typed is never sent back
			fd.Value = f.Values.Get(name)
		}
	}
	return fd
}

// Hinted returns the field with a hint under its label.
func (fd field) Hinted(hint string) field { fd.Hint = hint; return fd }

// Needed returns the field marked required.
func (fd field) Needed() field { fd.Required = true; return fd }

// Choices returns the field as a <select> of these options; the one whose
// value is the field's is selected.
func (fd field) Choices(opts []option) field {
	fd.Type = "select"
	fd.Options = make([]option, len(opts))
	for i, o := range opts {
		o.Selected = o.Value == fd.Value
		fd.Options[i] = o
	}
	return fd
}

// Auto returns the field with the autocomplete attribute a.
func (fd field) Auto(a string) field { fd.Autocomplete = a; return fd }

// Default returns the field with value v unless the form gave it one.
func (fd field) Default(v string) field {
	if fd.Value == "" {
		fd.Value = v
	}
	return fd
}

// merge returns f with the errors of other.
func (f *form) merge(other *form) *form {
	for k, v := range other.Errors {
		f.Errors[k] = v
	}
	if other.Error != "" {
		f.Error = other.Error
	}
	return f
}
