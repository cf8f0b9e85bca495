-- Gatehouse schema, version 1 (PostgreSQL; mirrors sqlite/migration/0001_init.sql).
-- Timestamps are Unix milliseconds (UTC); money is integer nano-USD.
-- Lists are ordered by (created_at, id); every list has an index in that order.

CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX organizations_created ON organizations (created_at, id);

CREATE TABLE members (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    email           TEXT NOT NULL,
    first_name      TEXT,
    last_name       TEXT,
    role            TEXT NOT NULL CHECK (role IN ('org:admin', 'org:member')),
    created_at      BIGINT NOT NULL,
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
    io_logging_sampling_rate            DOUBLE PRECISION NOT NULL DEFAULT 1,
    is_data_discount_logging_enabled    BOOLEAN NOT NULL DEFAULT FALSE,
    is_observability_broadcast_enabled  BOOLEAN NOT NULL DEFAULT FALSE,
    is_observability_io_logging_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    include_byok_in_budgets             BOOLEAN NOT NULL DEFAULT FALSE,
    is_default                          BOOLEAN NOT NULL DEFAULT FALSE,
    default_guardrail_id                TEXT NOT NULL UNIQUE, -- derived from id (gatehouse.DefaultGuardrailID)
    created_by                          TEXT,
    created_at                          BIGINT NOT NULL,
    updated_at                          BIGINT,
    UNIQUE (organization_id, slug)
);
CREATE UNIQUE INDEX workspaces_one_default ON workspaces (organization_id) WHERE is_default;
CREATE INDEX workspaces_list ON workspaces (organization_id, created_at, id);

CREATE TABLE workspace_members (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
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
    management            BOOLEAN NOT NULL DEFAULT FALSE,
    name                  TEXT NOT NULL,
    disabled              BOOLEAN NOT NULL DEFAULT FALSE,
    limit_nanos           BIGINT,
    limit_reset           TEXT CHECK (limit_reset IN ('daily', 'weekly', 'monthly')),
    include_byok_in_limit BOOLEAN NOT NULL DEFAULT FALSE,
    creator_user_id       TEXT,
    external_user         TEXT,
    external_key_hash     TEXT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT,
    expires_at            BIGINT,
    usage_total           BIGINT NOT NULL DEFAULT 0,
    usage_day             BIGINT NOT NULL DEFAULT 0,
    usage_day_start       BIGINT NOT NULL DEFAULT 0,
    usage_week            BIGINT NOT NULL DEFAULT 0,
    usage_week_start      BIGINT NOT NULL DEFAULT 0,
    usage_month           BIGINT NOT NULL DEFAULT 0,
    usage_month_start     BIGINT NOT NULL DEFAULT 0,
    byok_total            BIGINT NOT NULL DEFAULT 0,
    byok_day              BIGINT NOT NULL DEFAULT 0,
    byok_day_start        BIGINT NOT NULL DEFAULT 0,
    byok_week             BIGINT NOT NULL DEFAULT 0,
    byok_week_start       BIGINT NOT NULL DEFAULT 0,
    byok_month            BIGINT NOT NULL DEFAULT 0,
    byok_month_start      BIGINT NOT NULL DEFAULT 0,
    CHECK (management = (workspace_id IS NULL))
);
CREATE INDEX api_keys_org_list ON api_keys (organization_id, management, created_at, hash);
CREATE INDEX api_keys_workspace_list ON api_keys (workspace_id, created_at, hash);
CREATE INDEX api_keys_workspace_creator ON api_keys (workspace_id, creator_user_id);
CREATE INDEX api_keys_org_creator ON api_keys (organization_id, creator_user_id);

-- Applications of the OAuth flow: one per organization and callback origin.
CREATE TABLE oauth_apps (
    id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    origin          TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    UNIQUE (organization_id, origin)
);

-- Authorization codes. Only the SHA-256 of a code is stored.
CREATE TABLE auth_codes (
    code_hash             TEXT PRIMARY KEY,
    organization_id       TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id          TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app_id                BIGINT NOT NULL REFERENCES oauth_apps (id) ON DELETE CASCADE,
    creator_user_id       TEXT,
    callback_url          TEXT NOT NULL,
    code_challenge        TEXT,
    code_challenge_method TEXT,
    limit_nanos           BIGINT,
    limit_reset           TEXT,
    key_expires_at        BIGINT,
    key_label             TEXT NOT NULL,
    created_at            BIGINT NOT NULL,
    expires_at            BIGINT NOT NULL,
    used_at               BIGINT,
    failed_attempts       BIGINT NOT NULL DEFAULT 0
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
    limit_nanos                   BIGINT,
    reset_interval                TEXT CHECK (reset_interval IN ('daily', 'weekly', 'monthly')),
    include_byok_in_budgets       BOOLEAN NOT NULL DEFAULT FALSE,
    enforce_zdr                   BOOLEAN,
    enforce_zdr_anthropic         BOOLEAN,
    enforce_zdr_openai            BOOLEAN,
    enforce_zdr_google            BOOLEAN,
    enforce_zdr_xai               BOOLEAN,
    enforce_zdr_other             BOOLEAN,
    enable_free_model_publication BOOLEAN,
    enable_free_model_training    BOOLEAN,
    enable_paid_model_training    BOOLEAN,
    allowed_data_regions          TEXT,
    content_filters               TEXT,
    content_filter_builtins       TEXT,
    created_at                    BIGINT NOT NULL,
    updated_at                    BIGINT,
    UNIQUE (workspace_id, name)
);
CREATE INDEX guardrails_list ON guardrails (workspace_id, created_at, id);
CREATE INDEX guardrails_org ON guardrails (organization_id);

-- A key holds at most one guardrail (UNIQUE key_hash).
CREATE TABLE key_assignments (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    guardrail_id    TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    key_hash        TEXT NOT NULL UNIQUE REFERENCES api_keys (hash) ON DELETE CASCADE,
    assigned_by     TEXT,
    created_at      BIGINT NOT NULL
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
    created_at      BIGINT NOT NULL,
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
    enabled                              BOOLEAN NOT NULL,
    privacy_mode                         BOOLEAN NOT NULL,
    sampling_rate                        DOUBLE PRECISION NOT NULL,
    api_key_hashes                       TEXT,
    filter_rules                         TEXT,
    regions                              TEXT NOT NULL,
    broadcast_generation_cost            BOOLEAN NOT NULL,
    broadcast_generation_identity        BOOLEAN NOT NULL,
    broadcast_generation_request_context BOOLEAN NOT NULL,
    created_at                           BIGINT NOT NULL,
    updated_at                           BIGINT NOT NULL,
    deleted_at                           BIGINT
);
CREATE INDEX destinations_list ON destinations (workspace_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX destinations_type ON destinations (workspace_id, type) WHERE deleted_at IS NULL;

-- Changes to what authentication reads are announced on channel
-- gatehouse_keys, the payload being the key hash, so that the key cache of
-- every instance forgets the key as soon as the change commits. Usage
-- counters are not announced: authentication does not read them. Nor is
-- an update that leaves those columns as they were (a rename writes
-- disabled too): a notification is not free, as every listener is
-- signalled and commits queue on the notification lock.
CREATE FUNCTION gatehouse_announce_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gatehouse_keys', OLD.hash);
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_announce_change
    AFTER UPDATE OF disabled, expires_at, workspace_id, management, organization_id, creator_user_id
    ON api_keys FOR EACH ROW
    WHEN (OLD.disabled IS DISTINCT FROM NEW.disabled OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
        OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.management IS DISTINCT FROM NEW.management
        OR OLD.organization_id IS DISTINCT FROM NEW.organization_id OR OLD.creator_user_id IS DISTINCT FROM NEW.creator_user_id)
    EXECUTE FUNCTION gatehouse_announce_key_change();
CREATE TRIGGER api_keys_announce_delete
    AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_key_change();
