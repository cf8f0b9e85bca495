package gatehouse

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "gatehouse", Version: "v0.0.0-20261125035228-2408d77d2e4f+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "2408d77d2e4f2f285434e36b631ce9169bd2b8a6"},
			{Key: "vcs.time", Value: "2026-11-25T03:52:28Z"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name string
		info *debug.BuildInfo
		want BuildInfo
		line string
	}{
		{"built from a checkout", stamped, BuildInfo{Version: "v0.0.0-20261125035228-2408d77d2e4f+dirty",
			Revision: "2408d77d2e4f2f285434e36b631ce9169bd2b8a6", Time: "2026-11-25T03:52:28Z", Modified: true, GoVersion: "go1.26.0"},
			"gatehouse v0.0.0-20261125035228-2408d77d2e4f+dirty (revision 2408d77d2e4f2f285434e36b631ce9169bd2b8a6 of 2026-11-25T03:52:28Z, with uncommitted changes) go1.26.0"},
		{"go install of a tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}},
			BuildInfo{Version: "v1.2.0", GoVersion: "go1.26.0"}, "gatehouse v1.2.0 go1.26.0"},
		{"no stamp", &debug.BuildInfo{}, BuildInfo{Version: "(devel)", GoVersion: runtime.Version()}, "gatehouse (devel) " + runtime.Version()},
		{"no build info", nil, BuildInfo{Version: "(devel)", GoVersion: runtime.Version()}, "gatehouse (devel) " + runtime.Version()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildInfoOf(tt.info)
			if got != tt.want {
				t.Errorf("buildInfoOf = %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.line {
				t.Errorf("String() = %q, want %q", got.String(), tt.line)
			}
		})
	}
}

// TestBuildInfoStamped: what a build without a checkout (the container
// image) is told at link time wins over the toolchain's "(devel)"; a
// revision and its time make Go's pseudo-version.
func TestBuildInfoStamped(t *testing.T) {
	devel := buildInfoOf(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}})
	rev := "2408d77d2e4f2f285434e36b631ce9169bd2b8a6"
	tests := []struct {
		name                           string
		version, revision, time, dirty string
		want                           BuildInfo
	}{
		{"nothing stamped", "", "", "", "", devel},
		{"a revision and its time", "", rev, "2026-11-25T04:52:28+01:00", "",
			BuildInfo{Version: "v0.0.0-20261125035228-2408d77d2e4f", Revision: rev, Time: "2026-11-25T03:52:28Z", GoVersion: "go1.26.0"}},
		{"modified", "", rev, "2026-11-25T03:52:28Z", "true",
			BuildInfo{Version: "v0.0.0-20261125035228-2408d77d2e4f+dirty", Revision: rev, Time: "2026-11-25T03:52:28Z", Modified: true, GoVersion: "go1.26.0"}},
		{"a tag", "v1.2.0", rev, "2026-11-25T03:52:28Z", "",
			BuildInfo{Version: "v1.2.0", Revision: rev, Time: "2026-11-25T03:52:28Z", GoVersion: "go1.26.0"}},
		{"a revision without a time", "", rev, "yesterday", "",
			BuildInfo{Version: "(devel)", Revision: rev, GoVersion: "go1.26.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := devel.stamped(tt.version, tt.revision, tt.time, tt.dirty); got != tt.want {
				t.Errorf("stamped = %+v, want %+v", got, tt.want)
			}
		})
	}
}
