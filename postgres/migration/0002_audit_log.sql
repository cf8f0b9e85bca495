-- The audit log: one row per successful management change, appended in the
-- transaction of the change. Rows hold ids, field names and counts, never a
-- secret.
CREATE TABLE audit_log (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    at              BIGINT NOT NULL,
    actor_key_hash  TEXT,
    actor_user_id   TEXT,
    operation       TEXT NOT NULL,
    resource_type   TEXT NOT NULL,
    resource_ids    TEXT NOT NULL, -- JSON array
    details         TEXT,          -- JSON object
    result          TEXT NOT NULL,
    request_id      TEXT
);
CREATE INDEX audit_log_list ON audit_log (organization_id, at, id);
CREATE INDEX audit_log_actor_key ON audit_log (organization_id, actor_key_hash, at);
CREATE INDEX audit_log_actor_user ON audit_log (organization_id, actor_user_id, at);
CREATE INDEX audit_log_resource_type ON audit_log (organization_id, resource_type, at);
