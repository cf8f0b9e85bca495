package console

// More kinds of fields than form.go's inputs and selects: a text area (a
// list typed one entry a line), a checkbox, and a group of checkboxes.
// Template use: {{template "area" (field .Page.Form "models" "Models"
// "textarea")}}, {{template "box" (field .Page.Form "enabled" "Enabled"
// "checkbox")}}, {{template "checks" (checks .Page.Form "tools" "Tools"
// .Page.Tools)}}.

// Checked reports whether a checkbox field is ticked: its form's value
// is "on" (what a ticked box sends).
func (fd field) Checked() bool { return fd.Value == "on" }

// NeededIf returns the field marked required when required is true.
func (fd field) NeededIf(required bool) field { fd.Required = fd.Required || required; return fd }

// checkGroup is a group of checkboxes of one name, each an option (its
// Selected: ticked).
type checkGroup struct {
	Name, Label, Hint, Error string
	Options                  []option
}

// newChecks returns the group name of f, labelled, of the options (those
// the form holds ticked, when it holds any value of name).
func newChecks(f *form, name, label string, opts []option) checkGroup {
	g := checkGroup{Name: name, Label: label, Options: opts}
	if f != nil {
		g.Error = f.Errors[name]
	}
	return g
}

// Hinted returns the group with a hint under its label.
func (g checkGroup) Hinted(hint string) checkGroup { g.Hint = hint; return g }
