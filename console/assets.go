package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"gatehouse"
)

//go:embed assets
var assetFS embed.FS

// assetVersions holds a short hash of each asset's content, which its URL
// carries (/assets/console.css?v=…): a new release changes the URL, so a
// browser may keep an asset for a year.
var assetVersions = func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, "assets/")] = hex.EncodeToString(sum[:6])
		return nil
	})
	return out
}()

// assetURL is the URL of an asset, with its version.
func assetURL(name string) string {
	v, ok := assetVersions[name]
	if !ok {
		panic("console: no asset " + name) // a template's typo, found by any test
	}
	return "/assets/" + name + "?v=" + v
}

// asset serves an embedded asset. With the current version in its URL it
// may be cached for a year; without, it must be checked again.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("file")
	b, err := assetFS.ReadFile(path.Join("assets", name))
	if err != nil || strings.HasSuffix(name, ".md") {
		return gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no asset %s.", name)
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if v := r.URL.Query().Get("v"); v != "" && v == assetVersions[name] {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	_, err = w.Write(b)
	return err
}
