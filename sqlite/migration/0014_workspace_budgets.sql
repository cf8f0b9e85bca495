-- Workspace budgets and organization credits are budgets as a guardrail's
-- is: a request holds against them in reservation_budgets and its cost is
-- counted in guardrail_usage, under the budget's id (a guardrail's, a
-- workspace budget's or an organization's credits') and its subject. Those
-- two tables referred to guardrails; they now take the id of any budget,
-- so they lose that foreign key, and triggers delete a budget's rows with
-- it, as the cascade did. The view budgets lists every budget id: what
-- admission checks a budget still exists against.
CREATE TABLE reservation_budgets_new (
    reservation_id TEXT NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    guardrail_id   TEXT NOT NULL, -- the budget's id (see the view budgets)
    subject        TEXT NOT NULL, -- key:<hash>, member:<user id>, workspace:<id> or organization:<id>
    PRIMARY KEY (reservation_id, guardrail_id, subject)
);
INSERT INTO reservation_budgets_new SELECT reservation_id, guardrail_id, subject FROM reservation_budgets;
DROP TABLE reservation_budgets;
ALTER TABLE reservation_budgets_new RENAME TO reservation_budgets;
CREATE INDEX reservation_budgets_subject ON reservation_budgets (guardrail_id, subject);

CREATE TABLE guardrail_usage_new (
    guardrail_id      TEXT NOT NULL, -- the budget's id (see the view budgets)
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
INSERT INTO guardrail_usage_new SELECT guardrail_id, subject, usage_total, usage_day, usage_day_start, usage_week,
    usage_week_start, usage_month, usage_month_start, byok_total, byok_day, byok_day_start, byok_week,
    byok_week_start, byok_month, byok_month_start FROM guardrail_usage;
DROP TABLE guardrail_usage;
ALTER TABLE guardrail_usage_new RENAME TO guardrail_usage;

-- A workspace's budgets: at most one per interval (daily, weekly, monthly,
-- lifetime), the limit in nano-USD. What the workspace's keys spend is
-- counted under the budget's id, subject workspace:<workspace id>.
CREATE TABLE workspace_budgets (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    reset_interval  TEXT NOT NULL, -- daily, weekly, monthly or lifetime
    limit_nanos     BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (workspace_id, reset_interval)
);

-- An organization's credits: what all its requests may spend, granted by
-- the operator; an organization without a row is unlimited. Its spend is
-- counted under id, subject organization:<organization id>.
CREATE TABLE organization_credits (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL UNIQUE REFERENCES organizations (id) ON DELETE CASCADE,
    total_nanos     BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

-- Every grant (or correction, when negative) that made the credits' total.
CREATE TABLE credit_grants (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    amount_nanos    BIGINT NOT NULL,
    total_nanos     BIGINT NOT NULL, -- the credits' total after the grant
    created_at      BIGINT NOT NULL
);
CREATE INDEX credit_grants_list ON credit_grants (organization_id, created_at, id);

CREATE VIEW budgets AS
    SELECT id FROM guardrails
    UNION ALL SELECT id FROM workspace_budgets
    UNION ALL SELECT id FROM organization_credits;

CREATE TRIGGER guardrails_drop_budget AFTER DELETE ON guardrails BEGIN
    DELETE FROM reservation_budgets WHERE guardrail_id = OLD.id;
    DELETE FROM guardrail_usage WHERE guardrail_id = OLD.id;
END;
CREATE TRIGGER workspace_budgets_drop_budget AFTER DELETE ON workspace_budgets BEGIN
    DELETE FROM reservation_budgets WHERE guardrail_id = OLD.id;
    DELETE FROM guardrail_usage WHERE guardrail_id = OLD.id;
END;
CREATE TRIGGER organization_credits_drop_budget AFTER DELETE ON organization_credits BEGIN
    DELETE FROM reservation_budgets WHERE guardrail_id = OLD.id;
    DELETE FROM guardrail_usage WHERE guardrail_id = OLD.id;
END;
