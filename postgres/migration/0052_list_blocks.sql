-- Where a page deep in a long list starts (issue 30): the keys API's four
-- lists, the audit log and the members. They page by offset; skipping half a million
-- entries of an index costs 0.1-0.4 s, so each list is cut into blocks
-- whose sizes are kept, and a page at any offset is found by adding the
-- sizes of the blocks before it (a thousand rows at a million) and skipping
-- within its block (at most about a thousand entries): sqlstore/blocks.go.
--
-- A block starts at an anchor, a row of its base: an organization's keys
-- (the rows of its list 'keys') place its lists 'keys' and 'keys_enabled',
-- a workspace's keys 'workspace_keys' and 'workspace_keys_enabled', an
-- organization's audit entries its 'audit_log' (list_bases). A block holds
-- the rows of its list at or after its anchor and before the next anchor,
-- in the ascending order of (time, key) (the audit log is listed newest
-- first: backwards); the block before the first anchor is at (-1, '').
--
-- The last block of a list, from the last anchor on, is where rows being
-- made go: it is never kept, its size is the list's count (list_counts)
-- less the others', so that making a row writes no block. Anchors are
-- placed in it later, every 1,024 rows of the base, by the store
-- (sqlstore.CloseListBlocks, every minute, for rows older than a minute),
-- which keeps the blocks it closes. This migration places none: until the
-- store has closed the rows a database holds (at its start, in short
-- writes), each list is one last block, read as before. The triggers below keep the kept
-- blocks: a row made, deleted, disabled or enabled before the last anchor
-- moves its block's size by one; an anchor deleted joins its block to the
-- one before it (or, the last, makes that one the last). A block's size is
-- the sum of its parts: a statement adds to one of 16 at random, so that
-- rows changed at once seldom write the same row (as list_counts). Writes
-- are SERIALIZABLE: two that read and move the same anchors or blocks at
-- once are retried one after the other; making a row reads the anchors and
-- writes no block, and the store places anchors only among rows a minute
-- old, where no row is being made.
CREATE TABLE list_bases (
    list TEXT PRIMARY KEY,
    base TEXT NOT NULL
);
INSERT INTO list_bases VALUES ('keys', 'keys'), ('keys_enabled', 'keys'),
    ('workspace_keys', 'workspace_keys'), ('workspace_keys_enabled', 'workspace_keys'), ('audit_log', 'audit_log'),
    ('members', 'members');
CREATE TABLE list_anchors (
    base  TEXT NOT NULL,
    scope TEXT NOT NULL,
    at    BIGINT NOT NULL,
    id    TEXT NOT NULL,
    PRIMARY KEY (base, scope, at, id)
);
CREATE TABLE list_blocks (
    list  TEXT NOT NULL,
    scope TEXT NOT NULL,
    at    BIGINT NOT NULL,
    id    TEXT NOT NULL,
    part  INT NOT NULL,
    n     BIGINT NOT NULL,
    PRIMARY KEY (list, scope, at, id, part)
);

-- The rows of the lists (a base's are those of the list of its name).
CREATE VIEW list_rows (list, scope, at, id) AS
    SELECT 'keys', organization_id, created_at, hash FROM api_keys WHERE NOT management
    UNION ALL SELECT 'keys_enabled', organization_id, created_at, hash FROM api_keys WHERE NOT management AND NOT disabled
    UNION ALL SELECT 'workspace_keys', workspace_id, created_at, hash FROM api_keys WHERE workspace_id IS NOT NULL
    UNION ALL SELECT 'workspace_keys_enabled', workspace_id, created_at, hash FROM api_keys
        WHERE workspace_id IS NOT NULL AND NOT disabled
    UNION ALL SELECT 'audit_log', organization_id, at, id FROM audit_log
    UNION ALL SELECT 'members', organization_id, created_at, id FROM members;

-- The anchor of a base's scope at or before (at, id), or before it
-- (strictly); (-1, '') if none.
CREATE FUNCTION gatehouse_anchor_at(b TEXT, s TEXT, a BIGINT, i TEXT, strictly BOOLEAN)
RETURNS TABLE (at BIGINT, id TEXT) LANGUAGE sql STABLE AS $$
    SELECT COALESCE(x.at, -1), COALESCE(x.id, '') FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT l.at, l.id FROM list_anchors l WHERE l.base = b AND l.scope = s
            AND (l.at, l.id) <= (a, i) AND NOT (strictly AND (l.at, l.id) = (a, i))
        ORDER BY l.at DESC, l.id DESC LIMIT 1) x ON true
$$;
-- Whether a block of a base's scope is kept: whether an anchor follows it.
CREATE FUNCTION gatehouse_block_kept(b TEXT, s TEXT, a BIGINT, i TEXT) RETURNS BOOLEAN LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM list_anchors l WHERE l.base = b AND l.scope = s AND (l.at, l.id) > (a, i))
$$;
-- The bases and lists a key is in: (list, base, scope) rows.
CREATE FUNCTION gatehouse_key_blocks(organization_id TEXT, workspace_id TEXT, management BOOLEAN, disabled BOOLEAN)
RETURNS TABLE (list TEXT, base TEXT, scope TEXT) LANGUAGE sql IMMUTABLE AS $$
    SELECT l.list, lb.base, l.scope FROM gatehouse_key_lists(organization_id, workspace_id, management, disabled) l
        JOIN (VALUES ('keys', 'keys'), ('keys_enabled', 'keys'), ('workspace_keys', 'workspace_keys'),
            ('workspace_keys_enabled', 'workspace_keys')) lb (list, base) ON lb.list = l.list
$$;

-- Counts again, whole, the blocks of a base's lists at an anchor (or at
-- (-1, '')), whatever was added to them; the last is not kept.
CREATE FUNCTION gatehouse_block_recount(b TEXT, s TEXT, a BIGINT, i TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    na BIGINT;
    ni TEXT;
BEGIN
    DELETE FROM list_blocks o USING list_bases lb WHERE lb.base = b AND o.list = lb.list AND o.scope = s AND o.at = a AND o.id = i;
    SELECT l.at, l.id INTO na, ni FROM list_anchors l WHERE l.base = b AND l.scope = s AND (l.at, l.id) > (a, i)
        ORDER BY l.at, l.id LIMIT 1;
    IF NOT FOUND THEN
        RETURN; -- the last block
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT lb.list, s, a, i, 0, gatehouse_list_count(lb.list, s, a, i, na, ni) FROM list_bases lb WHERE lb.base = b;
END
$$;
-- The rows of a list in [from, to), each list by its index.
CREATE FUNCTION gatehouse_list_count(l TEXT, s TEXT, fa BIGINT, fi TEXT, ta BIGINT, ti TEXT)
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
    END CASE;
    RETURN n;
END
$$;
-- Anchors whose rows were deleted go, with their blocks; the blocks
-- before them are counted again (each now reaches the next anchor left,
-- or is the last).
CREATE FUNCTION gatehouse_anchors_removed(removed list_anchors[]) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    IF removed IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM list_blocks o USING unnest(removed) r, list_bases lb
        WHERE lb.base = r.base AND o.list = lb.list AND o.scope = r.scope AND o.at = r.at AND o.id = r.id;
    PERFORM gatehouse_block_recount(x.base, x.scope, x.at, x.id) FROM (
        SELECT DISTINCT r.base, r.scope, p.at, p.id
        FROM unnest(removed) r CROSS JOIN LATERAL gatehouse_anchor_at(r.base, r.scope, r.at, r.id, true) p) x;
END
$$;

-- Keys made or deleted (a statement's, all in the table or all gone; the
-- audit log's entries below, likewise): each moves the size of the block
-- it falls in by one, unless it is the last; then the anchors among the
-- keys deleted go.
CREATE FUNCTION gatehouse_keys_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d INT := CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END;
    removed list_anchors[];
BEGIN
    IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM moved_keys k JOIN list_anchors a
            ON a.base IN ('keys', 'workspace_keys') AND a.scope IN (k.organization_id, k.workspace_id) AND (a.at, a.id) > (k.created_at, k.hash)) THEN
        RETURN NULL; -- every key made is in its lists' last blocks: the keys being made
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT l.list, l.scope, x.at, x.id, floor(random() * 16)::int, d * count(*)
        FROM moved_keys k CROSS JOIN LATERAL gatehouse_key_blocks(k.organization_id, k.workspace_id, k.management, k.disabled) l
            CROSS JOIN LATERAL gatehouse_anchor_at(l.base, l.scope, k.created_at, k.hash, false) x
        WHERE gatehouse_block_kept(l.base, l.scope, x.at, x.id)
        GROUP BY l.list, l.scope, x.at, x.id
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    IF TG_OP = 'DELETE' THEN
        WITH org AS (
            DELETE FROM list_anchors a USING moved_keys k
            WHERE a.base = 'keys' AND a.scope = k.organization_id AND a.at = k.created_at AND a.id = k.hash
            RETURNING a.*
        ), ws AS (
            DELETE FROM list_anchors a USING moved_keys k
            WHERE a.base = 'workspace_keys' AND a.scope = k.workspace_id AND a.at = k.created_at AND a.id = k.hash
            RETURNING a.*)
        SELECT array_agg(gone) INTO removed FROM (SELECT * FROM org UNION ALL SELECT * FROM ws) gone;
        PERFORM gatehouse_anchors_removed(removed);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_blocked AFTER INSERT ON api_keys
    REFERENCING NEW TABLE AS moved_keys FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_keys_blocked();
CREATE TRIGGER api_keys_unblocked AFTER DELETE ON api_keys
    REFERENCING OLD TABLE AS moved_keys FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_keys_blocked();

-- A key disabled or enabled leaves its enabled lists' block or joins it.
CREATE FUNCTION gatehouse_keys_reblocked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT l.list, l.scope, x.at, x.id, floor(random() * 16)::int, sum(l.n)
        FROM (SELECT list, base, scope, -1 AS n FROM gatehouse_key_blocks(OLD.organization_id, OLD.workspace_id, OLD.management, OLD.disabled)
            UNION ALL
            SELECT list, base, scope, 1 FROM gatehouse_key_blocks(NEW.organization_id, NEW.workspace_id, NEW.management, NEW.disabled)) l
            CROSS JOIN LATERAL gatehouse_anchor_at(l.base, l.scope, NEW.created_at, NEW.hash, false) x
        WHERE gatehouse_block_kept(l.base, l.scope, x.at, x.id)
        GROUP BY l.list, l.scope, x.at, x.id HAVING sum(l.n) <> 0
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_reblocked AFTER UPDATE OF disabled ON api_keys
    FOR EACH ROW WHEN (OLD.disabled IS DISTINCT FROM NEW.disabled) EXECUTE FUNCTION gatehouse_keys_reblocked();

-- Nothing moves a key to another organization, workspace, kind or time,
-- and the blocks could not follow: such an update is refused.
CREATE FUNCTION gatehouse_keys_placed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a key''s organization, workspace, kind, hash and creation time do not change';
END
$$;
CREATE TRIGGER api_keys_placed BEFORE UPDATE OF organization_id, workspace_id, management, created_at, hash ON api_keys
    FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id
        OR OLD.management IS DISTINCT FROM NEW.management OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.hash IS DISTINCT FROM NEW.hash)
    EXECUTE FUNCTION gatehouse_keys_placed();

CREATE FUNCTION gatehouse_audit_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d INT := CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END;
    removed list_anchors[];
BEGIN
    IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM moved_entries e JOIN list_anchors a
            ON a.base = 'audit_log' AND a.scope = e.organization_id AND (a.at, a.id) > (e.at, e.id)) THEN
        RETURN NULL; -- every entry made is in the last block
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT 'audit_log', e.organization_id, x.at, x.id, floor(random() * 16)::int, d * count(*)
        FROM moved_entries e CROSS JOIN LATERAL gatehouse_anchor_at('audit_log', e.organization_id, e.at, e.id, false) x
        WHERE gatehouse_block_kept('audit_log', e.organization_id, x.at, x.id)
        GROUP BY e.organization_id, x.at, x.id
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    IF TG_OP = 'DELETE' THEN
        WITH gone AS (
            DELETE FROM list_anchors a USING moved_entries e
            WHERE a.base = 'audit_log' AND a.scope = e.organization_id AND a.at = e.at AND a.id = e.id
            RETURNING a.*)
        SELECT array_agg(gone) INTO removed FROM gone;
        PERFORM gatehouse_anchors_removed(removed);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER audit_log_blocked AFTER INSERT ON audit_log
    REFERENCING NEW TABLE AS moved_entries FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_audit_blocked();
CREATE TRIGGER audit_log_unblocked AFTER DELETE ON audit_log
    REFERENCING OLD TABLE AS moved_entries FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_audit_blocked();
-- Nothing moves an audit entry to another organization or time.
CREATE FUNCTION gatehouse_audit_placed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'an audit entry''s organization, time and id do not change';
END
$$;
CREATE TRIGGER audit_log_placed BEFORE UPDATE OF organization_id, at, id ON audit_log
    FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id OR OLD.at IS DISTINCT FROM NEW.at OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION gatehouse_audit_placed();

CREATE FUNCTION gatehouse_members_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d INT := CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END;
    removed list_anchors[];
BEGIN
    IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM moved_members e JOIN list_anchors a
            ON a.base = 'members' AND a.scope = e.organization_id AND (a.at, a.id) > (e.created_at, e.id)) THEN
        RETURN NULL; -- every member made is in the last block
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT 'members', e.organization_id, x.at, x.id, floor(random() * 16)::int, d * count(*)
        FROM moved_members e CROSS JOIN LATERAL gatehouse_anchor_at('members', e.organization_id, e.created_at, e.id, false) x
        WHERE gatehouse_block_kept('members', e.organization_id, x.at, x.id)
        GROUP BY e.organization_id, x.at, x.id
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    IF TG_OP = 'DELETE' THEN
        WITH gone AS (
            DELETE FROM list_anchors a USING moved_members e
            WHERE a.base = 'members' AND a.scope = e.organization_id AND a.at = e.created_at AND a.id = e.id
            RETURNING a.*)
        SELECT array_agg(gone) INTO removed FROM gone;
        PERFORM gatehouse_anchors_removed(removed);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER members_blocked AFTER INSERT ON members
    REFERENCING NEW TABLE AS moved_members FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_members_blocked();
CREATE TRIGGER members_unblocked AFTER DELETE ON members
    REFERENCING OLD TABLE AS moved_members FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_members_blocked();
-- Nothing moves a member to another organization or time.
CREATE FUNCTION gatehouse_members_placed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a member''s organization, time and id do not change';
END
$$;
CREATE TRIGGER members_placed BEFORE UPDATE OF organization_id, created_at, id ON members
    FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION gatehouse_members_placed();
