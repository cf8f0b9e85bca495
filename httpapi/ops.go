package httpapi

import (
	"context"
	"net/http"
	"time"
)

type statusJSON struct {
	Status string `json:"status"`
}

// healthz reports that the process serves requests; it checks nothing else,
// so that an orchestrator does not restart a healthy process when the
// database is down.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, statusJSON{"ok"})
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
