-- The number of keys of each list of the keys API, kept by triggers (issue
-- 30): an organization's regular keys and those of them that are enabled,
-- a workspace's keys and its enabled ones. The keys API reads a page past
-- the middle of its list from the list's end (sqlstore/keylist.go), which
-- needs the list's length without counting it.
-- Scopes: the organization ('keys', 'keys_enabled') or the workspace
-- ('workspace_keys', 'workspace_keys_enabled'); a list's count is the sum
-- of its rows, which a statement adds to one of 16 blocks at random (as
-- migration 0031's counts); a bulk COPY counts once.
INSERT INTO list_counts SELECT 'keys', organization_id, 0, count(*) FROM api_keys WHERE NOT management GROUP BY organization_id;
INSERT INTO list_counts SELECT 'keys_enabled', organization_id, 0, count(*) FROM api_keys WHERE NOT management AND NOT disabled GROUP BY organization_id;
INSERT INTO list_counts SELECT 'workspace_keys', workspace_id, 0, count(*) FROM api_keys WHERE workspace_id IS NOT NULL GROUP BY workspace_id;
INSERT INTO list_counts SELECT 'workspace_keys_enabled', workspace_id, 0, count(*) FROM api_keys WHERE workspace_id IS NOT NULL AND NOT disabled GROUP BY workspace_id;
-- The lists a key is in: (list, scope) rows, none for the lists it is not in.
CREATE FUNCTION gatehouse_key_lists(organization_id TEXT, workspace_id TEXT, management BOOLEAN, disabled BOOLEAN)
RETURNS TABLE (list TEXT, scope TEXT) LANGUAGE sql IMMUTABLE AS $$
    SELECT l.list, l.scope FROM (VALUES
        ('keys', CASE WHEN NOT management THEN organization_id END),
        ('keys_enabled', CASE WHEN NOT management AND NOT disabled THEN organization_id END),
        ('workspace_keys', workspace_id),
        ('workspace_keys_enabled', CASE WHEN NOT disabled THEN workspace_id END)) l (list, scope)
    WHERE l.scope IS NOT NULL
$$;
CREATE FUNCTION gatehouse_keys_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT l.list, l.scope, floor(random() * 16)::int, CASE TG_OP WHEN 'DELETE' THEN -count(*) ELSE count(*) END
        FROM counted_keys k CROSS JOIN LATERAL gatehouse_key_lists(k.organization_id, k.workspace_id, k.management, k.disabled) l
        GROUP BY l.list, l.scope
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_counted AFTER INSERT ON api_keys
    REFERENCING NEW TABLE AS counted_keys FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_keys_counted();
CREATE TRIGGER api_keys_uncounted AFTER DELETE ON api_keys
    REFERENCING OLD TABLE AS counted_keys FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_keys_counted();
-- A key disabled or enabled (or moved: no path does, but the count would
-- follow) leaves the lists it was in and joins those it is in now.
CREATE FUNCTION gatehouse_keys_recounted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT list, scope, floor(random() * 16)::int, sum(n) FROM (
            SELECT list, scope, -1 AS n FROM gatehouse_key_lists(OLD.organization_id, OLD.workspace_id, OLD.management, OLD.disabled)
            UNION ALL
            SELECT list, scope, 1 FROM gatehouse_key_lists(NEW.organization_id, NEW.workspace_id, NEW.management, NEW.disabled)) moved
        GROUP BY list, scope HAVING sum(n) <> 0
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_recounted AFTER UPDATE OF disabled, workspace_id, management, organization_id ON api_keys
    FOR EACH ROW WHEN (OLD.disabled IS DISTINCT FROM NEW.disabled OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id
        OR OLD.management IS DISTINCT FROM NEW.management OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
    EXECUTE FUNCTION gatehouse_keys_recounted();
