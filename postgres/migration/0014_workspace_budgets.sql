-- Workspace budgets and organization credits are budgets as a guardrail's
-- is: a request holds against them in reservation_budgets and its cost is
-- counted in guardrail_usage, under the budget's id (a guardrail's, a
-- workspace budget's or an organization's credits') and its subject. Those
-- two tables referred to guardrails; they now take the id of any budget,
-- so they lose that foreign key, and triggers delete a budget's rows with
-- it, as the cascade did. The view budgets lists every budget id: what
-- admission checks a budget still exists against.
ALTER TABLE reservation_budgets DROP CONSTRAINT reservation_budgets_guardrail_id_fkey;
ALTER TABLE guardrail_usage DROP CONSTRAINT guardrail_usage_guardrail_id_fkey;

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

CREATE FUNCTION gatehouse_drop_budget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM reservation_budgets WHERE guardrail_id = OLD.id;
    DELETE FROM guardrail_usage WHERE guardrail_id = OLD.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER guardrails_drop_budget AFTER DELETE ON guardrails
    FOR EACH ROW EXECUTE FUNCTION gatehouse_drop_budget();
CREATE TRIGGER workspace_budgets_drop_budget AFTER DELETE ON workspace_budgets
    FOR EACH ROW EXECUTE FUNCTION gatehouse_drop_budget();
CREATE TRIGGER organization_credits_drop_budget AFTER DELETE ON organization_credits
    FOR EACH ROW EXECUTE FUNCTION gatehouse_drop_budget();
