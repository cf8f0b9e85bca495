-- More lists get blocks (issue 30; what a block is: migration 0052,
-- sqlstore/blocks.go), each its own base, with its count kept:
--   key_assignments, member_assignments        an organization's (counted since 0031)
--   guardrail_key_assignments,
--   guardrail_member_assignments               a guardrail's
--   workspaces                                 an organization's
--   guardrails, workspace_members, presets     a workspace's
--   credit_grants, sso_providers,
--   group_mappings, scim_groups                an organization's
--   invitations                                an organization's unused links
--                                              (the usable ones are their newest)
-- in the order (created_at, id), the presets' (updated_at, id) (listed
-- newest first). A row changed so that its place in a list moves (an
-- assignment moved to another guardrail rewrites its guardrail, time and
-- id; a preset updated, its time) leaves the list where it was and joins
-- it where it is now.
--
-- One trigger function, gatehouse_rows_listed, serves every such table:
-- gatehouse_row_lists says which lists a row of a table is in and where
-- (a line a list: adding a list is a line there, a branch of
-- gatehouse_list_count, its triggers); the function compares a
-- statement's old and new rows by it and moves the counts, blocks and
-- anchors of the rows that left a list or joined one
-- (gatehouse_rows_moved). (Destinations, at most 5 of each type in a
-- workspace, and BYOK keys, at most 50 of a provider, stay short lists.)
INSERT INTO list_bases VALUES ('key_assignments', 'key_assignments'),
    ('guardrail_key_assignments', 'guardrail_key_assignments'),
    ('member_assignments', 'member_assignments'),
    ('guardrail_member_assignments', 'guardrail_member_assignments'),
    ('workspaces', 'workspaces'), ('guardrails', 'guardrails'),
    ('workspace_members', 'workspace_members'), ('presets', 'presets'),
    ('credit_grants', 'credit_grants'), ('sso_providers', 'sso_providers'),
    ('group_mappings', 'group_mappings'), ('scim_groups', 'scim_groups'),
    ('invitations', 'invitations');

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
    UNION ALL SELECT 'guardrail_member_assignments', guardrail_id, created_at, id FROM member_assignments
    UNION ALL SELECT 'workspaces', organization_id, created_at, id FROM workspaces
    UNION ALL SELECT 'guardrails', workspace_id, created_at, id FROM guardrails
    UNION ALL SELECT 'workspace_members', workspace_id, created_at, id FROM workspace_members
    UNION ALL SELECT 'presets', workspace_id, updated_at, id FROM presets
    UNION ALL SELECT 'credit_grants', organization_id, created_at, id FROM credit_grants
    UNION ALL SELECT 'sso_providers', organization_id, created_at, id FROM sso_providers
    UNION ALL SELECT 'group_mappings', organization_id, created_at, id FROM group_mappings
    UNION ALL SELECT 'scim_groups', organization_id, created_at, id FROM scim_groups
    UNION ALL SELECT 'invitations', organization_id, created_at, id FROM invitations WHERE used_at IS NULL;

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
    WHEN 'workspaces' THEN
        SELECT count(*) INTO n FROM workspaces WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'guardrails' THEN
        SELECT count(*) INTO n FROM guardrails WHERE workspace_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'workspace_members' THEN
        SELECT count(*) INTO n FROM workspace_members WHERE workspace_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'presets' THEN
        SELECT count(*) INTO n FROM presets WHERE workspace_id = s
            AND (updated_at, id) >= (fa, fi) AND (updated_at, id) < (ta, ti);
    WHEN 'credit_grants' THEN
        SELECT count(*) INTO n FROM credit_grants WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'sso_providers' THEN
        SELECT count(*) INTO n FROM sso_providers WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'group_mappings' THEN
        SELECT count(*) INTO n FROM group_mappings WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'scim_groups' THEN
        SELECT count(*) INTO n FROM scim_groups WHERE organization_id = s
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    WHEN 'invitations' THEN
        SELECT count(*) INTO n FROM invitations WHERE organization_id = s AND used_at IS NULL
            AND (created_at, id) >= (fa, fi) AND (created_at, id) < (ta, ti);
    END CASE;
    RETURN n;
END
$$;

-- A row of a list that is its own base.
CREATE TYPE gatehouse_list_row AS (list TEXT, scope TEXT, at BIGINT, id TEXT);

-- The lists a row of table t (as JSON: a trigger's transition rows have
-- no type of their own) is in, and its place there: one line a list.
CREATE FUNCTION gatehouse_row_lists(t TEXT, r JSONB) RETURNS SETOF gatehouse_list_row LANGUAGE sql IMMUTABLE AS $$
    SELECT 'key_assignments', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'key_assignments'
    UNION ALL SELECT 'guardrail_key_assignments', r->>'guardrail_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'key_assignments'
    UNION ALL SELECT 'member_assignments', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'member_assignments'
    UNION ALL SELECT 'guardrail_member_assignments', r->>'guardrail_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'member_assignments'
    UNION ALL SELECT 'workspaces', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'workspaces'
    UNION ALL SELECT 'guardrails', r->>'workspace_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'guardrails'
    UNION ALL SELECT 'workspace_members', r->>'workspace_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'workspace_members'
    UNION ALL SELECT 'presets', r->>'workspace_id', (r->>'updated_at')::bigint, r->>'id' WHERE t = 'presets'
    UNION ALL SELECT 'credit_grants', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'credit_grants'
    UNION ALL SELECT 'sso_providers', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'sso_providers'
    UNION ALL SELECT 'group_mappings', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'group_mappings'
    UNION ALL SELECT 'scim_groups', r->>'organization_id', (r->>'created_at')::bigint, r->>'id' WHERE t = 'scim_groups'
    UNION ALL SELECT 'invitations', r->>'organization_id', (r->>'created_at')::bigint, r->>'id'
        WHERE t = 'invitations' AND r->>'used_at' IS NULL
$$;

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
        SELECT r.list, r.scope, x.at, x.id, gatehouse_part(), d * count(*)
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

-- A statement's rows made, deleted or changed (old_rows, new_rows): the
-- lists' places they left and those they joined (an update's old places
-- less its new ones, and the other way round) move the lists' counts (in
-- the writing connection's part: migration 0053), blocks and anchors.
CREATE FUNCTION gatehouse_rows_listed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gone gatehouse_list_row[];
    made gatehouse_list_row[];
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT array_agg(l) INTO gone FROM old_rows o CROSS JOIN LATERAL gatehouse_row_lists(TG_TABLE_NAME, to_jsonb(o)) l;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(l) INTO made FROM new_rows n CROSS JOIN LATERAL gatehouse_row_lists(TG_TABLE_NAME, to_jsonb(n)) l;
    ELSE
        SELECT array_agg((x.list, x.scope, x.at, x.id)::gatehouse_list_row) INTO gone FROM (
            SELECT l.* FROM old_rows o CROSS JOIN LATERAL gatehouse_row_lists(TG_TABLE_NAME, to_jsonb(o)) l
            EXCEPT ALL
            SELECT l.* FROM new_rows n CROSS JOIN LATERAL gatehouse_row_lists(TG_TABLE_NAME, to_jsonb(n)) l) x;
        SELECT array_agg((x.list, x.scope, x.at, x.id)::gatehouse_list_row) INTO made FROM (
            SELECT l.* FROM new_rows n CROSS JOIN LATERAL gatehouse_row_lists(TG_TABLE_NAME, to_jsonb(n)) l
            EXCEPT ALL
            SELECT l.* FROM old_rows o CROSS JOIN LATERAL gatehouse_row_lists(TG_TABLE_NAME, to_jsonb(o)) l) x;
    END IF;
    INSERT INTO list_counts (list, scope, block, n)
        SELECT r.list, r.scope, gatehouse_part(), sum(r.n) FROM (
            SELECT list, scope, -1 AS n FROM unnest(gone)
            UNION ALL
            SELECT list, scope, 1 FROM unnest(made)) r
        GROUP BY r.list, r.scope HAVING sum(r.n) <> 0
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    PERFORM gatehouse_rows_moved(gone, -1);
    PERFORM gatehouse_rows_moved(made, 1);
    RETURN NULL;
END
$$;

-- The counts of the lists, from here on kept by gatehouse_rows_listed.
DROP TRIGGER key_assignments_counted ON key_assignments;
DROP TRIGGER key_assignments_uncounted ON key_assignments;
DROP TRIGGER member_assignments_counted ON member_assignments;
DROP TRIGGER member_assignments_uncounted ON member_assignments;
DELETE FROM list_counts WHERE list IN ('key_assignments', 'member_assignments');
INSERT INTO list_counts SELECT list, scope, 0, count(*) FROM list_rows
    WHERE list IN ('key_assignments', 'guardrail_key_assignments', 'member_assignments', 'guardrail_member_assignments',
        'workspaces', 'guardrails', 'workspace_members', 'presets', 'credit_grants', 'sso_providers', 'group_mappings', 'scim_groups',
        'invitations')
    GROUP BY list, scope;
CREATE TRIGGER key_assignments_listed AFTER INSERT ON key_assignments REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER key_assignments_unlisted AFTER DELETE ON key_assignments REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER key_assignments_relisted AFTER UPDATE ON key_assignments REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER member_assignments_listed AFTER INSERT ON member_assignments REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER member_assignments_unlisted AFTER DELETE ON member_assignments REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER member_assignments_relisted AFTER UPDATE ON member_assignments REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER workspaces_listed AFTER INSERT ON workspaces REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER workspaces_unlisted AFTER DELETE ON workspaces REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER workspaces_relisted AFTER UPDATE ON workspaces REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER guardrails_listed AFTER INSERT ON guardrails REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER guardrails_unlisted AFTER DELETE ON guardrails REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER guardrails_relisted AFTER UPDATE ON guardrails REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER workspace_members_listed AFTER INSERT ON workspace_members REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER workspace_members_unlisted AFTER DELETE ON workspace_members REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER workspace_members_relisted AFTER UPDATE ON workspace_members REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER presets_listed AFTER INSERT ON presets REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER presets_unlisted AFTER DELETE ON presets REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER presets_relisted AFTER UPDATE ON presets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER credit_grants_listed AFTER INSERT ON credit_grants REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER credit_grants_unlisted AFTER DELETE ON credit_grants REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER credit_grants_relisted AFTER UPDATE ON credit_grants REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER sso_providers_listed AFTER INSERT ON sso_providers REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER sso_providers_unlisted AFTER DELETE ON sso_providers REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER sso_providers_relisted AFTER UPDATE ON sso_providers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER group_mappings_listed AFTER INSERT ON group_mappings REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER group_mappings_unlisted AFTER DELETE ON group_mappings REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER group_mappings_relisted AFTER UPDATE ON group_mappings REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER scim_groups_listed AFTER INSERT ON scim_groups REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER scim_groups_unlisted AFTER DELETE ON scim_groups REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER scim_groups_relisted AFTER UPDATE ON scim_groups REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER invitations_listed AFTER INSERT ON invitations REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER invitations_unlisted AFTER DELETE ON invitations REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
CREATE TRIGGER invitations_relisted AFTER UPDATE ON invitations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_rows_listed();
