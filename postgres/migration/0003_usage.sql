-- The data plane: reservations held while a request runs, the usage of
-- guardrail budgets, and the ledger of completed requests. Money is integer
-- nano-USD; times are Unix milliseconds.

-- A reservation holds a request's worst-case cost against its key's limit
-- and its guardrail budgets; it stops counting at expires_at.
CREATE TABLE reservations (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    key_hash        TEXT NOT NULL REFERENCES api_keys (hash) ON DELETE CASCADE,
    amount          BIGINT NOT NULL,
    byok            BOOLEAN NOT NULL,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL
);
CREATE INDEX reservations_key ON reservations (key_hash, expires_at);
CREATE INDEX reservations_expiry ON reservations (expires_at);

CREATE TABLE reservation_budgets (
    reservation_id TEXT NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    guardrail_id   TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    subject        TEXT NOT NULL, -- key:<hash> or member:<user id>
    PRIMARY KEY (reservation_id, guardrail_id)
);
CREATE INDEX reservation_budgets_subject ON reservation_budgets (guardrail_id, subject);

-- Spend counted against a guardrail's budget, per subject, with the same
-- period columns as api_keys.
CREATE TABLE guardrail_usage (
    guardrail_id      TEXT NOT NULL REFERENCES guardrails (id) ON DELETE CASCADE,
    subject           TEXT NOT NULL,
    usage_total       BIGINT NOT NULL DEFAULT 0,
    usage_day         BIGINT NOT NULL DEFAULT 0,
    usage_day_start   BIGINT NOT NULL DEFAULT 0,
    usage_week        BIGINT NOT NULL DEFAULT 0,
    usage_week_start  BIGINT NOT NULL DEFAULT 0,
    usage_month       BIGINT NOT NULL DEFAULT 0,
    usage_month_start BIGINT NOT NULL DEFAULT 0,
    byok_total        BIGINT NOT NULL DEFAULT 0,
    byok_day          BIGINT NOT NULL DEFAULT 0,
    byok_day_start    BIGINT NOT NULL DEFAULT 0,
    byok_week         BIGINT NOT NULL DEFAULT 0,
    byok_week_start   BIGINT NOT NULL DEFAULT 0,
    byok_month        BIGINT NOT NULL DEFAULT 0,
    byok_month_start  BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (guardrail_id, subject)
);

-- The usage ledger: one row per completed request, written in the
-- transaction that updates the counters. It keeps the key's hash without a
-- foreign key, so that it outlives deleted keys.
CREATE TABLE generations (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id      TEXT NOT NULL,
    key_hash          TEXT NOT NULL,
    model             TEXT NOT NULL,
    provider          TEXT NOT NULL,
    upstream_id       TEXT,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    cost              BIGINT NOT NULL,
    byok              BOOLEAN NOT NULL,
    streamed          BOOLEAN NOT NULL,
    finish_reason     TEXT,
    status            TEXT NOT NULL,
    latency_ms        BIGINT NOT NULL,
    generation_ms     BIGINT NOT NULL,
    session_id        TEXT,
    external_user     TEXT,
    created_at        BIGINT NOT NULL
);
CREATE INDEX generations_key ON generations (key_hash, created_at);
CREATE INDEX generations_org ON generations (organization_id, created_at, id);
