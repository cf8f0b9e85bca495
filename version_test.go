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
