-- BYOK keys: a workspace's own API keys for providers of the providers
-- file, which the gateway sends instead of the operator's. The provider key
-- lives only in sealed_key, sealed with AES-256-GCM and bound to the row's
-- id; label is its masked form, all the management API ever shows. Deleting
-- a key (or its workspace, or organization) removes the row.
CREATE TABLE byok_keys (
    id                     TEXT PRIMARY KEY,
    organization_id        TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id           TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    provider               TEXT NOT NULL,
    name                   TEXT,
    sealed_key             TEXT NOT NULL,
    label                  TEXT NOT NULL,
    disabled               BOOLEAN NOT NULL,
    allowed_api_key_hashes TEXT, -- JSON array, NULL: any key
    allowed_models         TEXT, -- JSON array, NULL: any model
    allowed_user_ids       TEXT, -- JSON array, NULL: any user
    declared_zdr           BOOLEAN,
    is_byok_only           BOOLEAN NOT NULL,
    is_fallback            BOOLEAN NOT NULL,
    is_required            BOOLEAN NOT NULL,
    sort_order             BIGINT NOT NULL,
    created_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL
);
-- The list of a workspace (optionally of one provider), and the gateway's
-- read of a workspace's keys for a provider.
CREATE INDEX byok_keys_list ON byok_keys (workspace_id, created_at, id);
CREATE INDEX byok_keys_provider ON byok_keys (workspace_id, provider, sort_order);
CREATE INDEX byok_keys_organization ON byok_keys (organization_id);
