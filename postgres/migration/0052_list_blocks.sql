-- Where a page deep in a long list starts, kept by triggers (issue 30): the
-- keys API's four lists and the audit log. They page by offset; skipping
-- half a million entries of an index costs 0.1-0.4 s, so each list is cut
-- into blocks whose sizes the writes keep, and a page at any offset is
-- found by adding the sizes of the blocks before it (a thousand rows at a
-- million) and skipping within its block (about a thousand entries):
-- sqlstore/blocks.go.
--
-- A block starts at an anchor: a row whose key (a key's hash, an audit
-- entry's id) ends in 000 to 003, one in 1,024 whatever the order the rows
-- were made in. The anchors of a base place the rows of its lists
-- (list_bases): an organization's keys place its lists 'keys' and
-- 'keys_enabled', a workspace's keys 'workspace_keys' and
-- 'workspace_keys_enabled', an organization's audit entries its
-- 'audit_log'. A key disabled or enabled moves between lists but stays an
-- anchor, so only a row made or deleted moves an anchor. A block holds the
-- rows of its list at or after its anchor and before the next anchor, in
-- the ascending order of (time, key) (the audit log is listed newest
-- first: backwards); the block before the first anchor is at (-1, ''). Its
-- size is the sum of its parts: a statement adds to one of 16 at random,
-- so that rows made at once (all in the newest block) seldom write the
-- same row (as list_counts).
--
-- Writes are SERIALIZABLE: two that read and move the same anchors or
-- blocks at once are retried one after the other.
CREATE TABLE list_bases (
    list TEXT PRIMARY KEY,
    base TEXT NOT NULL
);
INSERT INTO list_bases VALUES ('keys', 'keys'), ('keys_enabled', 'keys'),
    ('workspace_keys', 'workspace_keys'), ('workspace_keys_enabled', 'workspace_keys'), ('audit_log', 'audit_log');
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

-- The rows of the lists, with the base whose anchors place them.
CREATE VIEW list_rows (list, base, scope, at, id) AS
    SELECT 'keys', 'keys', organization_id, created_at, hash FROM api_keys WHERE NOT management
    UNION ALL SELECT 'keys_enabled', 'keys', organization_id, created_at, hash FROM api_keys WHERE NOT management AND NOT disabled
    UNION ALL SELECT 'workspace_keys', 'workspace_keys', workspace_id, created_at, hash FROM api_keys WHERE workspace_id IS NOT NULL
    UNION ALL SELECT 'workspace_keys_enabled', 'workspace_keys', workspace_id, created_at, hash FROM api_keys
        WHERE workspace_id IS NOT NULL AND NOT disabled
    UNION ALL SELECT 'audit_log', 'audit_log', organization_id, at, id FROM audit_log;

CREATE FUNCTION gatehouse_anchor(key TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
    SELECT right(key, 3) IN ('000', '001', '002', '003')
$$;
-- The bases a key is placed in: (base, scope) rows.
CREATE FUNCTION gatehouse_key_bases(organization_id TEXT, workspace_id TEXT)
RETURNS TABLE (base TEXT, scope TEXT) LANGUAGE sql IMMUTABLE AS $$
    SELECT b.base, b.scope FROM (VALUES ('keys', organization_id), ('workspace_keys', workspace_id)) b (base, scope)
    WHERE b.scope IS NOT NULL
$$;
-- The anchor of a base's scope at or before (at, id), or before it
-- (strictly); (-1, '') if none.
CREATE FUNCTION gatehouse_anchor_at(b TEXT, s TEXT, a BIGINT, i TEXT, strictly BOOLEAN)
RETURNS TABLE (at BIGINT, id TEXT) LANGUAGE sql STABLE AS $$
    SELECT COALESCE(x.at, -1), COALESCE(x.id, '') FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT l.at, l.id FROM list_anchors l WHERE l.base = b AND l.scope = s
            AND (l.at, l.id) <= (a, i) AND NOT (strictly AND (l.at, l.id) = (a, i))
        ORDER BY l.at DESC, l.id DESC LIMIT 1) x ON true
$$;
-- The anchor of a base's scope after (at, id); (max, '') if none.
CREATE FUNCTION gatehouse_anchor_after(b TEXT, s TEXT, a BIGINT, i TEXT)
RETURNS TABLE (at BIGINT, id TEXT) LANGUAGE sql STABLE AS $$
    SELECT COALESCE(x.at, 9223372036854775807), COALESCE(x.id, '') FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT l.at, l.id FROM list_anchors l WHERE l.base = b AND l.scope = s AND (l.at, l.id) > (a, i)
        ORDER BY l.at, l.id LIMIT 1) x ON true
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
    END CASE;
    RETURN n;
END
$$;
-- Counts again, whole, the blocks of a base's lists at an anchor (or at
-- (-1, '')), whatever was added to them.
CREATE FUNCTION gatehouse_block_recount(b TEXT, s TEXT, a BIGINT, i TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM list_blocks o USING list_bases lb WHERE lb.base = b AND o.list = lb.list AND o.scope = s AND o.at = a AND o.id = i;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT lb.list, s, a, i, 0, gatehouse_list_count(lb.list, s, a, i, nx.at, nx.id)
        FROM list_bases lb CROSS JOIN gatehouse_anchor_after(b, s, a, i) nx WHERE lb.base = b;
END
$$;

INSERT INTO list_anchors SELECT b.base, b.scope, k.created_at, k.hash
    FROM api_keys k CROSS JOIN LATERAL gatehouse_key_bases(k.organization_id, k.workspace_id) b
    WHERE gatehouse_anchor(k.hash);
INSERT INTO list_anchors SELECT 'audit_log', organization_id, at, id FROM audit_log WHERE gatehouse_anchor(id);
INSERT INTO list_blocks (list, scope, at, id, part, n)
    SELECT r.list, r.scope, x.at, x.id, 0, count(*)
    FROM list_rows r CROSS JOIN LATERAL gatehouse_anchor_at(r.base, r.scope, r.at, r.id, false) x
    GROUP BY r.list, r.scope, x.at, x.id;

-- Keys made or deleted (a statement's, all in the table or all gone; the
-- audit log's entries below, likewise):
-- first the anchors among them come or go; then each key moves the size of
-- the block it falls in by one; last, the blocks an anchor moved (the
-- block before each anchor that came or went, and a new anchor's own) are
-- counted again from the keys, whole, whatever the moves added to them.
CREATE FUNCTION gatehouse_keys_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d INT := CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM moved_keys) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_anchors (base, scope, at, id)
            SELECT b.base, b.scope, k.created_at, k.hash
            FROM moved_keys k CROSS JOIN LATERAL gatehouse_key_bases(k.organization_id, k.workspace_id) b
            WHERE gatehouse_anchor(k.hash);
    ELSE
        DELETE FROM list_anchors a USING moved_keys k CROSS JOIN LATERAL gatehouse_key_bases(k.organization_id, k.workspace_id) b
            WHERE gatehouse_anchor(k.hash) AND a.base = b.base AND a.scope = b.scope AND a.at = k.created_at AND a.id = k.hash;
        DELETE FROM list_blocks o USING moved_keys k CROSS JOIN LATERAL gatehouse_key_bases(k.organization_id, k.workspace_id) b
            JOIN list_bases lb ON lb.base = b.base
            WHERE gatehouse_anchor(k.hash) AND o.list = lb.list AND o.scope = b.scope AND o.at = k.created_at AND o.id = k.hash;
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT l.list, l.scope, x.at, x.id, floor(random() * 16)::int, d * count(*)
        FROM moved_keys k CROSS JOIN LATERAL gatehouse_key_lists(k.organization_id, k.workspace_id, k.management, k.disabled) l
            JOIN list_bases lb ON lb.list = l.list
            CROSS JOIN LATERAL gatehouse_anchor_at(lb.base, l.scope, k.created_at, k.hash, false) x
        GROUP BY l.list, l.scope, x.at, x.id
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    PERFORM gatehouse_block_recount(m.base, m.scope, m.at, m.id) FROM (
        SELECT b.base, b.scope, p.at, p.id
        FROM moved_keys k CROSS JOIN LATERAL gatehouse_key_bases(k.organization_id, k.workspace_id) b
            CROSS JOIN LATERAL gatehouse_anchor_at(b.base, b.scope, k.created_at, k.hash, true) p
        WHERE gatehouse_anchor(k.hash)
        UNION SELECT b.base, b.scope, k.created_at, k.hash
        FROM moved_keys k CROSS JOIN LATERAL gatehouse_key_bases(k.organization_id, k.workspace_id) b
        WHERE gatehouse_anchor(k.hash) AND TG_OP = 'INSERT') m;
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
        FROM (SELECT list, scope, -1 AS n FROM gatehouse_key_lists(OLD.organization_id, OLD.workspace_id, OLD.management, OLD.disabled)
            UNION ALL
            SELECT list, scope, 1 FROM gatehouse_key_lists(NEW.organization_id, NEW.workspace_id, NEW.management, NEW.disabled)) l
            JOIN list_bases lb ON lb.list = l.list
            CROSS JOIN LATERAL gatehouse_anchor_at(lb.base, l.scope, NEW.created_at, NEW.hash, false) x
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
BEGIN
    IF NOT EXISTS (SELECT 1 FROM moved_entries) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_anchors (base, scope, at, id)
            SELECT 'audit_log', e.organization_id, e.at, e.id FROM moved_entries e WHERE gatehouse_anchor(e.id);
    ELSE
        DELETE FROM list_anchors a USING moved_entries e
            WHERE gatehouse_anchor(e.id) AND a.base = 'audit_log' AND a.scope = e.organization_id AND a.at = e.at AND a.id = e.id;
        DELETE FROM list_blocks o USING moved_entries e
            WHERE gatehouse_anchor(e.id) AND o.list = 'audit_log' AND o.scope = e.organization_id AND o.at = e.at AND o.id = e.id;
    END IF;
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT 'audit_log', e.organization_id, x.at, x.id, floor(random() * 16)::int, d * count(*)
        FROM moved_entries e CROSS JOIN LATERAL gatehouse_anchor_at('audit_log', e.organization_id, e.at, e.id, false) x
        GROUP BY e.organization_id, x.at, x.id
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = list_blocks.n + excluded.n;
    PERFORM gatehouse_block_recount('audit_log', m.scope, m.at, m.id) FROM (
        SELECT e.organization_id AS scope, p.at, p.id
        FROM moved_entries e CROSS JOIN LATERAL gatehouse_anchor_at('audit_log', e.organization_id, e.at, e.id, true) p
        WHERE gatehouse_anchor(e.id)
        UNION SELECT e.organization_id, e.at, e.id FROM moved_entries e WHERE gatehouse_anchor(e.id) AND TG_OP = 'INSERT') m;
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
