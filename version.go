package gatehouse

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// BuildInfo says which Gatehouse a binary is: the module version and the
// version-control state it was built from, as the Go toolchain stamped them
// (go build and go install from a checkout record the commit; go test
// records none).
type BuildInfo struct {
	// Version is the module version: a tag such as v1.2.0, a pseudo-version
	// such as v0.0.0-20261125034800-2e38a6d1c0de (+dirty when modified), or
	// "(devel)" when the toolchain knew none.
	Version string
	// Revision is the commit, or "" when not built from a checkout.
	Revision string
	// Time is the commit's time (RFC 3339), or "".
	Time string
	// Modified reports uncommitted changes in the checkout it was built from.
	Modified bool
	// GoVersion is the toolchain that built it.
	GoVersion string
}

var buildInfo = sync.OnceValue(func() BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return buildInfoOf(info)
})

// buildInfoOf reads what the toolchain stamped into info (nil: nothing).
func buildInfoOf(info *debug.BuildInfo) BuildInfo {
	b := BuildInfo{Version: "(devel)", GoVersion: runtime.Version()}
	if info == nil {
		return b
	}
	if v := info.Main.Version; v != "" {
		b.Version = v
	}
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// Build returns what this binary was built from.
func Build() BuildInfo { return buildInfo() }

// String is the one-line form: "gatehouse VERSION (revision REV, modified) goVERSION".
func (b BuildInfo) String() string {
	s := "gatehouse " + b.Version
	if b.Revision != "" {
		s += " (revision " + b.Revision
		if b.Time != "" {
			s += " of " + b.Time
		}
		if b.Modified {
			s += ", with uncommitted changes"
		}
		s += ")"
	}
	return s + " " + b.GoVersion
}
