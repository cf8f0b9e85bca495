package gatehouse

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
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

// What a build without a checkout says it was built from, set at link
// time: the container image's build has no .git for the toolchain to read,
// so the Dockerfile passes its build arguments VERSION, REVISION, VCS_TIME
// and MODIFIED as -ldflags "-X gatehouse.stampVersion=... -X
// gatehouse.stampRevision=... -X gatehouse.stampTime=... -X
// gatehouse.stampModified=true". Those set win over the toolchain's.
var stampVersion, stampRevision, stampTime, stampModified string

var buildInfo = sync.OnceValue(func() BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return buildInfoOf(info).stamped(stampVersion, stampRevision, stampTime, stampModified)
})

// stamped returns b with what the link-time stamp says. Without a version,
// a revision and its time make the pseudo-version the Go toolchain would
// have stamped from the checkout (v0.0.0-20261125035228-2408d77d2e4f,
// +dirty when modified); a time that is not RFC 3339 is dropped.
func (b BuildInfo) stamped(version, revision, vcsTime, modified string) BuildInfo {
	if revision == "" && version == "" {
		return b
	}
	t, err := time.Parse(time.RFC3339, vcsTime)
	b.Revision, b.Time, b.Modified = revision, "", modified == "true"
	if err == nil {
		b.Time = t.UTC().Format(time.RFC3339)
	}
	switch {
	case version != "":
		b.Version = version
	case err == nil && len(revision) >= 12:
		b.Version = "v0.0.0-" + t.UTC().Format("20060102150405") + "-" + revision[:12]
		if b.Modified {
			b.Version += "+dirty"
		}
	default:
		b.Version = "(devel)"
	}
	return b
}

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
