-- Gatehouse schema, version 1.
-- Timestamps are Unix milliseconds (UTC); money is integer nano-USD.
-- Lists are ordered by (created_at, id); every list has an index in that order.

CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX organizations_created ON organizations (created_at, id);

CREATE TABLE members (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    email           TEXT NOT NULL,
    first_name      TEXT,
    last_name       TEXT,
    role            TEXT NOT NULL CHECK (role IN ('org:admin', 'org:member')),
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (organization_id, id)
);
CREATE UNIQUE INDEX members_email ON members (organization_id, lower(email));
CREATE INDEX members_list ON members (organization_id, created_at, id);

CREATE TABLE workspaces (
    id                                  TEXT PRIMARY KEY,
    organization_id                     TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                                TEXT NOT NULL,
    slug                                TEXT NOT NULL,
    description                         TEXT,
    default_text_model                  TEXT,
    default_image_model                 TEXT,
    default_provider_sort               TEXT,
    disabled_server_tools               TEXT, -- JSON array or NULL
    io_logging_api_key_ids              TEXT, -- JSON array or NULL
    io_logging_sampling_rate            REAL NOT NULL DEFAULT 1,
    is_data_discount_logging_enabled    INTEGER NOT NULL DEFAULT 0,
    is_observability_broadcast_enabled  INTEGER NOT NULL DEFAULT 0,
    is_observability_io_logging_enabled INTEGER NOT NULL DEFAULT 0,
    include_byok_in_budgets             INTEGER NOT NULL DEFAULT 0,
    is_default                          INTEGER NOT NULL DEFAULT 0,
    default_guardrail_id                TEXT NOT NULL UNIQUE, -- derived from id (gatehouse.DefaultGuardrailID)
    created_by                          TEXT,
    created_at                          INTEGER NOT NULL,
    updated_at                          INTEGER,
    UNIQUE (organization_id, slug)
);
CREATE UNIQUE INDEX workspaces_one_default ON workspaces (organization_id) WHERE is_default = 1;
CREATE INDEX workspaces_list ON workspaces (organization_id, created_at, id);

CREATE TABLE workspace_members (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    UNIQUE (workspace_id, user_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX workspace_members_list ON workspace_members (workspace_id, created_at, id);
CREATE INDEX workspace_members_user ON workspace_members (organization_id, user_id);

-- Regular and management keys. Only the SHA-256 of a key is stored.
-- Usage counters: *_total for all time, and per period the amount with the
-- start of the period it belongs to (a passed period reads as zero).
CREATE TABLE api_keys (
    hash                  TEXT PRIMARY KEY,
    organization_id       TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id          TEXT REFERENCES workspaces (id) ON DELETE CASCADE, -- NULL for management keys
    management            INTEGER NOT NULL DEFAULT 0,
    name                  TEXT NOT NULL,
    disabled              INTEGER NOT NULL DEFAULT 0,
    limit_nanos           INTEGER,
    limit_reset           TEXT CHECK (limit_reset IN ('daily', 'weekly', 'monthly')),
    include_byok_in_limit INTEGER NOT NULL DEFAULT 0,
    creator_user_id       TEXT,
    external_user         TEXT,
    external_key_hash     TEXT,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER,
    expires_at            INTEGER,
    usage_total           INTEGER NOT NULL DEFAULT 0,
    usage_day             INTEGER NOT NULL DEFAULT 0,
    usage_day_start       INTEGER NOT NULL DEFAULT 0,
    usage_week            INTEGER NOT NULL DEFAULT 0,
    usage_week_start      INTEGER NOT NULL DEFAULT 0,
    usage_month           INTEGER NOT NULL DEFAULT 0,
    usage_month_start     INTEGER NOT NULL DEFAULT 0,
    byok_total            INTEGER NOT NULL DEFAULT 0,
    byok_day              INTEGER NOT NULL DEFAULT 0,
    byok_day_start        INTEGER NOT NULL DEFAULT 0,
    byok_week             INTEGER NOT NULL DEFAULT 0,
    byok_week_start       INTEGER NOT NULL DEFAULT 0,
    byok_month            INTEGER NOT NULL DEFAULT 0,
    byok_month_start      INTEGER NOT NULL DEFAULT 0,
    CHECK ((management = 1) = (workspace_id IS NULL))
) WITHOUT ROWID; -- found by hash in one b-tree descent, not an index's then the table's
CREATE INDEX api_keys_org_list ON api_keys (organization_id, management, created_at, hash);
CREATE INDEX api_keys_workspace_list ON api_keys (workspace_id, created_at, hash);
CREATE INDEX api_keys_workspace_creator ON api_keys (workspace_id, creator_user_id);
CREATE INDEX api_keys_org_creator ON api_keys (organization_id, creator_user_id);

-- Applications of the OAuth flow: one per organization and callback origin.
CREATE TABLE oauth_apps (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    origin          TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    UNIQUE (organization_id, origin)
);

-- Authorization codes. Only the SHA-256 of a code is stored.
CREATE TABLE auth_codes (
    code_hash             TEXT PRIMARY KEY,
    organization_id       TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id          TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app_id                INTEGER NOT NULL REFERENCES oauth_apps (id) ON DELETE CASCADE,
    creator_user_id       TEXT,
    callback_url          TEXT NOT NULL,
    code_challenge        TEXT,
    code_challenge_method TEXT,
    limit_nanos           INTEGER,
    limit_reset           TEXT,
    key_expires_at        INTEGER,
    key_label             TEXT NOT NULL,
    created_at            INTEGER NOT NULL,
    expires_at            INTEGER NOT NULL,
    used_at               INTEGER,
    failed_attempts       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX auth_codes_challenge ON auth_codes (organization_id, code_challenge);

CREATE TABLE guardrails (
    id                            TEXT PRIMARY KEY,
    organization_id               TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id                  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                          TEXT NOT NULL,
    description                   TEXT,
    allowed_models                TEXT, -- JSON arrays or NULL
    allowed_providers             TEXT,
    ignored_models                TEXT,
    ignored_providers             TEXT,
    limit_nanos                   INTEGER,
    reset_interval                TEXT CHECK (reset_interval IN ('daily', 'weekly', 'monthly')),
    include_byok_in_budgets       INTEGER NOT NULL DEFAULT 0,
    enforce_zdr                   INTEGER,
    enforce_zdr_anthropic         INTEGER,
    enforce_zdr_openai            INTEGER,
    enforce_zdr_google            INTEGER,
    enforce_zdr_xai               INTEGER,
    enforce_zdr_other             INTEGER,
    enable_free_model_publication INTEGER,
    enable_free_model_training    INTEGER,
    enable_paid_model_training    INTEGER,
    allowed_data_regions          TEXT,
    content_filters               TEXT,
    content_filter_builtins       TEXT,
    created_at                    INTEGER NOT NULL,
    updated_at                    INTEGER,
    UNIQUE (workspace_id, name)
) WITHOUT ROWID;
CREATE INDEX guardrails_list ON guardrails (workspace_id, created_at, id);
CREATE INDEX guardrails_org ON guardrails (organization_id);

-- A key holds at most one guardrail (UNIQUE key_hash).
CREATE TABLE key_assignments (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    guardrail_id    TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    key_hash        TEXT NOT NULL UNIQUE REFERENCES api_keys (hash) ON DELETE CASCADE,
    assigned_by     TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX key_assignments_list ON key_assignments (guardrail_id, created_at, id);
CREATE INDEX key_assignments_org ON key_assignments (organization_id, created_at, id);

-- A member holds at most one guardrail (UNIQUE organization_id, user_id).
CREATE TABLE member_assignments (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    guardrail_id    TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    assigned_by     TEXT,
    created_at      INTEGER NOT NULL,
    UNIQUE (organization_id, user_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX member_assignments_list ON member_assignments (guardrail_id, created_at, id);
CREATE INDEX member_assignments_org ON member_assignments (organization_id, created_at, id);

-- Observability destinations. Soft-deleted rows keep deleted_at and their
-- workspace id even after the workspace is gone, hence no foreign key there.
-- Secret configuration values live only in `secrets`, sealed with AES-256-GCM.
CREATE TABLE destinations (
    id                                   TEXT PRIMARY KEY,
    organization_id                      TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id                         TEXT NOT NULL,
    name                                 TEXT,
    type                                 TEXT NOT NULL,
    config                               TEXT NOT NULL, -- JSON object of the non-secret values
    secrets                              TEXT,          -- sealed JSON of the secret values and headers
    enabled                              INTEGER NOT NULL,
    privacy_mode                         INTEGER NOT NULL,
    sampling_rate                        REAL NOT NULL,
    api_key_hashes                       TEXT,
    filter_rules                         TEXT,
    regions                              TEXT NOT NULL,
    broadcast_generation_cost            INTEGER NOT NULL,
    broadcast_generation_identity        INTEGER NOT NULL,
    broadcast_generation_request_context INTEGER NOT NULL,
    created_at                           INTEGER NOT NULL,
    updated_at                           INTEGER NOT NULL,
    deleted_at                           INTEGER
);
CREATE INDEX destinations_list ON destinations (workspace_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX destinations_type ON destinations (workspace_id, type) WHERE deleted_at IS NULL;
