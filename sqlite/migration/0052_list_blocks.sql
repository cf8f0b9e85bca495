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
-- the sum of its parts (one part here; PostgreSQL spreads writes over 16).
CREATE TABLE list_bases (
    list TEXT PRIMARY KEY,
    base TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO list_bases VALUES ('keys', 'keys'), ('keys_enabled', 'keys'),
    ('workspace_keys', 'workspace_keys'), ('workspace_keys_enabled', 'workspace_keys'), ('audit_log', 'audit_log'),
    ('members', 'members');
CREATE TABLE list_anchors (
    base  TEXT NOT NULL,
    scope TEXT NOT NULL,
    at    INTEGER NOT NULL,
    id    TEXT NOT NULL,
    PRIMARY KEY (base, scope, at, id)
) WITHOUT ROWID;
CREATE TABLE list_blocks (
    list  TEXT NOT NULL,
    scope TEXT NOT NULL,
    at    INTEGER NOT NULL,
    id    TEXT NOT NULL,
    part  INTEGER NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (list, scope, at, id, part)
) WITHOUT ROWID;

-- The rows of the lists (a base's are those of the list of its name).
CREATE VIEW list_rows (list, scope, at, id) AS
    SELECT 'keys', organization_id, created_at, hash FROM api_keys WHERE management = 0
    UNION ALL SELECT 'keys_enabled', organization_id, created_at, hash FROM api_keys WHERE management = 0 AND disabled = 0
    UNION ALL SELECT 'workspace_keys', workspace_id, created_at, hash FROM api_keys WHERE workspace_id IS NOT NULL
    UNION ALL SELECT 'workspace_keys_enabled', workspace_id, created_at, hash FROM api_keys
        WHERE workspace_id IS NOT NULL AND disabled = 0
    UNION ALL SELECT 'audit_log', organization_id, at, id FROM audit_log
    UNION ALL SELECT 'members', organization_id, created_at, id FROM members;

-- A row joins (d = 1) or leaves (d = -1) a list: the block it falls in
-- grows or shrinks by one, unless it is the last.
CREATE VIEW list_moves (list, base, scope, at, id, d) AS SELECT '', '', '', 0, '', 0 WHERE 0;
CREATE TRIGGER list_moved INSTEAD OF INSERT ON list_moves
WHEN EXISTS (SELECT 1 FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) > (NEW.at, NEW.id)) BEGIN
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT NEW.list, NEW.scope,
            COALESCE((SELECT at FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) <= (NEW.at, NEW.id)
                ORDER BY at DESC, id DESC LIMIT 1), -1),
            COALESCE((SELECT id FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) <= (NEW.at, NEW.id)
                ORDER BY at DESC, id DESC LIMIT 1), ''),
            0, NEW.d
        WHERE true
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = n + excluded.n;
END;

-- A row of a base deleted (after it left its lists' blocks): if it was an
-- anchor, its blocks join the blocks before it; if it was the last, the
-- block before it becomes the last, and is no longer kept.
CREATE VIEW anchor_removals (base, scope, at, id) AS SELECT '', '', 0, '' WHERE 0;
CREATE TRIGGER anchor_removed INSTEAD OF INSERT ON anchor_removals
WHEN EXISTS (SELECT 1 FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND at = NEW.at AND id = NEW.id) BEGIN
    DELETE FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND at = NEW.at AND id = NEW.id;
    DELETE FROM list_blocks WHERE list IN (SELECT list FROM list_bases WHERE base = NEW.base) AND scope = NEW.scope
        AND NOT EXISTS (SELECT 1 FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) > (NEW.at, NEW.id))
        AND (at, id) = (
            COALESCE((SELECT at FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) < (NEW.at, NEW.id)
                ORDER BY at DESC, id DESC LIMIT 1), -1),
            COALESCE((SELECT id FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) < (NEW.at, NEW.id)
                ORDER BY at DESC, id DESC LIMIT 1), ''));
    INSERT INTO list_blocks (list, scope, at, id, part, n)
        SELECT o.list, NEW.scope,
            COALESCE((SELECT at FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) < (NEW.at, NEW.id)
                ORDER BY at DESC, id DESC LIMIT 1), -1),
            COALESCE((SELECT id FROM list_anchors WHERE base = NEW.base AND scope = NEW.scope AND (at, id) < (NEW.at, NEW.id)
                ORDER BY at DESC, id DESC LIMIT 1), ''),
            0, sum(o.n)
        FROM list_blocks o
        WHERE o.list IN (SELECT list FROM list_bases WHERE base = NEW.base) AND o.scope = NEW.scope AND o.at = NEW.at AND o.id = NEW.id
        GROUP BY o.list
        ON CONFLICT (list, scope, at, id, part) DO UPDATE SET n = n + excluded.n;
    DELETE FROM list_blocks WHERE list IN (SELECT list FROM list_bases WHERE base = NEW.base) AND scope = NEW.scope
        AND at = NEW.at AND id = NEW.id;
END;

CREATE TRIGGER api_keys_blocked AFTER INSERT ON api_keys BEGIN
    INSERT INTO list_moves
        SELECT 'keys', 'keys', NEW.organization_id, NEW.created_at, NEW.hash, 1 WHERE NEW.management = 0
        UNION ALL SELECT 'keys_enabled', 'keys', NEW.organization_id, NEW.created_at, NEW.hash, 1 WHERE NEW.management = 0 AND NEW.disabled = 0
        UNION ALL SELECT 'workspace_keys', 'workspace_keys', NEW.workspace_id, NEW.created_at, NEW.hash, 1 WHERE NEW.workspace_id IS NOT NULL
        UNION ALL SELECT 'workspace_keys_enabled', 'workspace_keys', NEW.workspace_id, NEW.created_at, NEW.hash, 1
            WHERE NEW.workspace_id IS NOT NULL AND NEW.disabled = 0;
END;
CREATE TRIGGER api_keys_unblocked AFTER DELETE ON api_keys BEGIN
    INSERT INTO list_moves
        SELECT 'keys', 'keys', OLD.organization_id, OLD.created_at, OLD.hash, -1 WHERE OLD.management = 0
        UNION ALL SELECT 'keys_enabled', 'keys', OLD.organization_id, OLD.created_at, OLD.hash, -1 WHERE OLD.management = 0 AND OLD.disabled = 0
        UNION ALL SELECT 'workspace_keys', 'workspace_keys', OLD.workspace_id, OLD.created_at, OLD.hash, -1 WHERE OLD.workspace_id IS NOT NULL
        UNION ALL SELECT 'workspace_keys_enabled', 'workspace_keys', OLD.workspace_id, OLD.created_at, OLD.hash, -1
            WHERE OLD.workspace_id IS NOT NULL AND OLD.disabled = 0;
    INSERT INTO anchor_removals
        SELECT 'keys', OLD.organization_id, OLD.created_at, OLD.hash WHERE OLD.management = 0
        UNION ALL SELECT 'workspace_keys', OLD.workspace_id, OLD.created_at, OLD.hash WHERE OLD.workspace_id IS NOT NULL;
END;
-- A key disabled or enabled leaves its enabled lists' block or joins it.
CREATE TRIGGER api_keys_reblocked AFTER UPDATE OF disabled ON api_keys WHEN OLD.disabled IS NOT NEW.disabled BEGIN
    INSERT INTO list_moves
        SELECT 'keys_enabled', 'keys', NEW.organization_id, NEW.created_at, NEW.hash, CASE WHEN NEW.disabled = 0 THEN 1 ELSE -1 END
            WHERE NEW.management = 0
        UNION ALL SELECT 'workspace_keys_enabled', 'workspace_keys', NEW.workspace_id, NEW.created_at, NEW.hash,
            CASE WHEN NEW.disabled = 0 THEN 1 ELSE -1 END WHERE NEW.workspace_id IS NOT NULL;
END;
-- Nothing moves a key to another organization, workspace, kind or time,
-- and the blocks could not follow: such an update is refused.
CREATE TRIGGER api_keys_placed BEFORE UPDATE OF organization_id, workspace_id, management, created_at, hash ON api_keys
WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.workspace_id IS NOT NEW.workspace_id
    OR OLD.management IS NOT NEW.management OR OLD.created_at IS NOT NEW.created_at OR OLD.hash IS NOT NEW.hash BEGIN
    SELECT RAISE(ABORT, 'a key''s organization, workspace, kind, hash and creation time do not change');
END;

CREATE TRIGGER audit_log_blocked AFTER INSERT ON audit_log BEGIN
    INSERT INTO list_moves VALUES ('audit_log', 'audit_log', NEW.organization_id, NEW.at, NEW.id, 1);
END;
CREATE TRIGGER audit_log_unblocked AFTER DELETE ON audit_log BEGIN
    INSERT INTO list_moves VALUES ('audit_log', 'audit_log', OLD.organization_id, OLD.at, OLD.id, -1);
    INSERT INTO anchor_removals VALUES ('audit_log', OLD.organization_id, OLD.at, OLD.id);
END;
-- Nothing moves an audit entry to another organization or time.
CREATE TRIGGER audit_log_placed BEFORE UPDATE OF organization_id, at, id ON audit_log
WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.at IS NOT NEW.at OR OLD.id IS NOT NEW.id BEGIN
    SELECT RAISE(ABORT, 'an audit entry''s organization, time and id do not change');
END;

CREATE TRIGGER members_blocked AFTER INSERT ON members BEGIN
    INSERT INTO list_moves VALUES ('members', 'members', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER members_unblocked AFTER DELETE ON members BEGIN
    INSERT INTO list_moves VALUES ('members', 'members', OLD.organization_id, OLD.created_at, OLD.id, -1);
    INSERT INTO anchor_removals VALUES ('members', OLD.organization_id, OLD.created_at, OLD.id);
END;
-- Nothing moves a member to another organization or time.
CREATE TRIGGER members_placed BEFORE UPDATE OF organization_id, created_at, id ON members
WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id BEGIN
    SELECT RAISE(ABORT, 'a member''s organization, time and id do not change');
END;
