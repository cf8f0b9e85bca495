-- The guardrails' assignments get blocks too (issue 30; what a block is:
-- migration 0052, sqlstore/blocks.go): an organization's key and member
-- assignments ('key_assignments', 'member_assignments', counted since
-- migration 0031) and a guardrail's ('guardrail_key_assignments',
-- 'guardrail_member_assignments', counted from here on). Each list is its
-- own base, in the order (created_at, id).
--
-- Moving a key or a member to another guardrail rewrites its assignment's
-- guardrail, time and id (sqlstore.reassign): for the blocks, the row
-- leaves the lists it was in, where it was, and joins the lists it is in
-- now, at their end. Nothing moves an assignment to another organization.
INSERT INTO list_bases VALUES ('key_assignments', 'key_assignments'),
    ('guardrail_key_assignments', 'guardrail_key_assignments'),
    ('member_assignments', 'member_assignments'),
    ('guardrail_member_assignments', 'guardrail_member_assignments');

CREATE OR REPLACE VIEW list_rows (list, scope, at, id) AS
    SELECT 'keys', organization_id, created_at, hash FROM api_keys WHERE NOT management
    UNION ALL SELECT 'keys_enabled', organization_id, created_at, hash FROM api_keys WHERE NOT management AND NOT disabled
    UNION ALL SELECT 'workspace_keys', workspace_id, created_at, hash FROM api_keys WHERE workspace_id IS NOT NULL
    UNION ALL SELECT 'workspace_keys_enabled', workspace_id, created_at, hash FROM api_keys
        WHERE workspace_id IS NOT NULL AND NOT disabled
    UNION ALL SELECT 'audit_log', organization_id, at, id FROM audit_log
    UNION ALL SELECT 'members', organization_id, created_at, id FROM members
    UNION ALL SELECT 'key_assignments', organization_id, created_at, id FROM key_assignments
    UNION ALL SELECT 'guardrail_key_assignments', guardrail_id, created_at, id FROM key_assignments
    UNION ALL SELECT 'member_assignments', organization_id, created_at, id FROM member_assignments
    UNION ALL SELECT 'guardrail_member_assignments', guardrail_id, created_at, id FROM member_assignments;

CREATE OR REPLACE FUNCTION gatehouse_list_count(l TEXT, s TEXT, fa BIGINT, fi TEXT, ta BIGINT, ti TEXT)
RETURNS BIGINT LANGUAGE plpgsql STABLE AS $$
DECLARE
    n BIGINT;
BEGIN
    CASE l
    WHEN 'keys' THEN
        SELECT count(*) INTO n FROM api_keys WHERE organization_id = s AND NOT management
            AND (created_at, hash) >= (fa, fi) AND (created_at, hash) < (ta, ti);
    WHEN 'keys_enabled' THEN
        SELECT count(*) INTO n FROM api_keys WHERE organization_id = s AND NOT management AND NOT disabled
            AND (created_at, hash) >= (fa, fi) AND (created_at, hash) < (ta, ti);
    WHEN 'workspace_keys' THEN
        SELECT count(*) INTO n FROM api_keys WHERE workspace_id = s
            AND (created_at, hash) >= (fa, fi) AND (created_at, hash) < (ta, ti);
    WHEN 'workspace_keys_enabled' THEN
        SELECT count(*) INTO n FROM api_keys WHERE workspace_id = s AND NOT disabled
            AND (created_at, hash) >= (fa, fi) AND (created_at, hash) < (ta, ti);
    WHEN 'audit_log' THEN
        SELECT count(*) INTO n FROM audit_log WHERE organization_id = s AND (at, id) >= (fa, fi) AND (at, id) < (ta, ti);
    WHEN 'members' THEN
        SELECT count(*) INTO n FROM members WHERE organization_id = s AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'key_assignments' THEN
        SELECT count(*) INTO n FROM key_assignments WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'guardrail_key_assignments' THEN
        SELECT count(*) INTO n FROM key_assignments WHERE guardrail_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'member_assignments' THEN
        SELECT count(*) INTO n FROM member_assignments WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'guardrail_member_assignments' THEN
        SELECT count(*) INTO n FROM member_assignments WHERE guardrail_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    END CASE;
    RETURN n;
END
$$;

-- A row of a list that is its own base.
CREATE TYPE gatehouse_list_row AS (list TEXT, scope TEXT, at BIGINT, id TEXT);

-- Rows that joined (d = 1) or left (d = -1) lists that are their own
-- bases: each moves the size of the block it falls in by one, unless it
-- is the last; the anchors among rows that left go, with their blocks.
CREATE FUNCTION gatehouse_rows_moved(moved gatehouse_list_row[], d INT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    removed list_anchors[];
BEGIN
    IF moved IS NULL OR (d > 0 AND NOT EXISTS (SELECT 1 FROM unnest(moved) r JOIN list_anchors a
            ON a.base = r.list AND a.scope = r.scope AND (a.at, a.id) > (r.at, r.id))) THEN
        RETURN; -- none, or every row made is in its lists' last blocks
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT r.list, r.scope, x.at, x.id, floor(random() * 16)::int, d * count(*)
        FROM unnest(moved) r CROSS JOIN LATERAL gatehouse_anchor_at(r.list, r.scope, r.at, r.id, false) x
        WHERE gatehouse_block_kept(r.list, r.scope, x.at, x.id)
        GROUP BY r.list, r.scope, x.at, x.id
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    IF d < 0 THEN
        WITH gone AS (
            DELETE FROM list_anchors a USING unnest(moved) r
            WHERE a.base = r.list AND a.scope = r.scope AND a.at = r.at AND a.id = r.id
            RETURNING a.*)
        SELECT array_agg(gone) INTO removed FROM gone;
        PERFORM gatehouse_anchors_removed(removed);
    END IF;
END
$$;

-- Assignments made, deleted or moved to another guardrail (a statement's;
-- TG_ARGV: the organization's list, then the guardrail's): a guardrail's
-- count follows, and the rows that left a list (deleted, or whose
-- guardrail, time or id changed) and joined one move their blocks.
CREATE FUNCTION gatehouse_assignments_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    org_list TEXT := TG_ARGV[0];
    guardrail_list TEXT := TG_ARGV[1];
    gone gatehouse_list_row[];
    made gatehouse_list_row[];
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT array_agg(r) INTO gone FROM (
            SELECT (l.list, l.scope, o.created_at, o.id)::gatehouse_list_row r
            FROM old_rows o CROSS JOIN LATERAL (VALUES (org_list, o.organization_id), (guardrail_list, o.guardrail_id)) l (list, scope)) x;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(r) INTO made FROM (
            SELECT (l.list, l.scope, n.created_at, n.id)::gatehouse_list_row r
            FROM new_rows n CROSS JOIN LATERAL (VALUES (org_list, n.organization_id), (guardrail_list, n.guardrail_id)) l (list, scope)) x;
    ELSE
        -- Old and new rows (by their list, scope and place) that are not
        -- both: the rows that left a list and those that joined one.
        SELECT array_agg(r) INTO gone FROM (
            SELECT (l.list, l.scope, o.created_at, o.id)::gatehouse_list_row r
            FROM old_rows o CROSS JOIN LATERAL (VALUES (org_list, o.organization_id), (guardrail_list, o.guardrail_id)) l (list, scope)
            EXCEPT ALL
            SELECT (l.list, l.scope, n.created_at, n.id)::gatehouse_list_row
            FROM new_rows n CROSS JOIN LATERAL (VALUES (org_list, n.organization_id), (guardrail_list, n.guardrail_id)) l (list, scope)) x;
        SELECT array_agg(r) INTO made FROM (
            SELECT (l.list, l.scope, n.created_at, n.id)::gatehouse_list_row r
            FROM new_rows n CROSS JOIN LATERAL (VALUES (org_list, n.organization_id), (guardrail_list, n.guardrail_id)) l (list, scope)
            EXCEPT ALL
            SELECT (l.list, l.scope, o.created_at, o.id)::gatehouse_list_row
            FROM old_rows o CROSS JOIN LATERAL (VALUES (org_list, o.organization_id), (guardrail_list, o.guardrail_id)) l (list, scope)) x;
    END IF;
    INSERT INTO list_counts (list, scope, block, n)
        SELECT r.list, r.scope, floor(random() * 16)::int, sum(r.n) FROM (
            SELECT list, scope, -1 AS n FROM unnest(gone) WHERE list = guardrail_list
            UNION ALL
            SELECT list, scope, 1 FROM unnest(made) WHERE list = guardrail_list) r
        GROUP BY r.list, r.scope HAVING sum(r.n) <> 0
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    PERFORM gatehouse_rows_moved(gone, -1);
    PERFORM gatehouse_rows_moved(made, 1);
    RETURN NULL;
END
$$;

-- A guardrail's assignments are counted as the organization's are.
INSERT INTO list_counts SELECT 'guardrail_key_assignments', guardrail_id, 0, count(*) FROM key_assignments GROUP BY guardrail_id;
INSERT INTO list_counts SELECT 'guardrail_member_assignments', guardrail_id, 0, count(*) FROM member_assignments GROUP BY guardrail_id;

CREATE TRIGGER key_assignments_blocked AFTER INSERT ON key_assignments REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_assignments_blocked('key_assignments', 'guardrail_key_assignments');
CREATE TRIGGER key_assignments_unblocked AFTER DELETE ON key_assignments REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_assignments_blocked('key_assignments', 'guardrail_key_assignments');
CREATE TRIGGER key_assignments_reblocked AFTER UPDATE ON key_assignments REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_assignments_blocked('key_assignments', 'guardrail_key_assignments');
CREATE TRIGGER member_assignments_blocked AFTER INSERT ON member_assignments REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_assignments_blocked('member_assignments', 'guardrail_member_assignments');
CREATE TRIGGER member_assignments_unblocked AFTER DELETE ON member_assignments REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_assignments_blocked('member_assignments', 'guardrail_member_assignments');
CREATE TRIGGER member_assignments_reblocked AFTER UPDATE ON member_assignments REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_assignments_blocked('member_assignments', 'guardrail_member_assignments');

-- Nothing moves an assignment to another organization.
CREATE FUNCTION gatehouse_assignments_placed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'an assignment''s organization does not change';
END
$$;
CREATE TRIGGER key_assignments_placed BEFORE UPDATE OF organization_id ON key_assignments
    FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id) EXECUTE FUNCTION gatehouse_assignments_placed();
CREATE TRIGGER member_assignments_placed BEFORE UPDATE OF organization_id ON member_assignments
    FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id) EXECUTE FUNCTION gatehouse_assignments_placed();
