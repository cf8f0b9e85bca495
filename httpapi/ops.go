package httpapi

import (
	"context"
	"net/http"
	"time"

	"gatehouse"
)

type statusJSON struct {
	Status string `json:"status"`
}

// livenessJSON is the answer of /healthz: the status and which build runs.
type livenessJSON struct {
	Status    string  `json:"status"`
	Version   string  `json:"version"`
	Revision  *string `json:"revision"`
	VCSTime   *string `json:"vcs_time"`
	Modified  bool    `json:"modified"`
	GoVersion string  `json:"go_version"`
}

// healthz reports that the process serves requests, and which build it is;
// it checks nothing else, so that an orchestrator does not restart a
// healthy process when the database is down.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	b := gatehouse.Build()
	return writeJSON(w, http.StatusOK, livenessJSON{Status: "ok", Version: b.Version, Revision: nonEmpty(b.Revision),
		VCSTime: nonEmpty(b.Time), Modified: b.Modified, GoVersion: b.GoVersion})
}

// nonEmpty returns nil for "", else a pointer to s.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// readyz reports whether the database answers within two seconds.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, statusJSON{"ok"})
}
