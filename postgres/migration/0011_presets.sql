-- Presets: named request configurations of a workspace, which a chat
-- request applies as model "@preset/slug". Every change adds an immutable
-- version; latest_version (and its id) is the one requests use unless they
-- name another, kept on the preset so that lists and lookups read one row.
CREATE TABLE presets (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id      TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slug              TEXT NOT NULL,
    name              TEXT NOT NULL,
    description       TEXT,
    creator_user_id   TEXT,
    status            TEXT NOT NULL CHECK (status IN ('active', 'disabled', 'archived')),
    status_updated_at BIGINT,
    latest_version    BIGINT NOT NULL,
    latest_version_id TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    UNIQUE (workspace_id, slug)
);
-- Lists: most recently updated first, then by id (the index read backwards).
CREATE INDEX presets_list ON presets (workspace_id, updated_at, id);
CREATE INDEX presets_org ON presets (organization_id);

-- config is a JSON object of Chat Completions fields; versions never change.
CREATE TABLE preset_versions (
    id            TEXT PRIMARY KEY,
    preset_id     TEXT NOT NULL REFERENCES presets (id) ON DELETE CASCADE,
    version       BIGINT NOT NULL CHECK (version > 0),
    config        TEXT NOT NULL,
    system_prompt TEXT,
    creator_id    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    UNIQUE (preset_id, version)
);
