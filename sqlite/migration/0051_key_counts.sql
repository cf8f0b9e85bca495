-- The number of keys of each list of the keys API, kept by triggers (issue
-- 30): an organization's regular keys and those of them that are enabled,
-- a workspace's keys and its enabled ones. The keys API reads a page past
-- the middle of its list from the list's end (sqlstore/keylist.go), which
-- needs the list's length without counting it.
-- Scopes: the organization ('keys', 'keys_enabled') or the workspace
-- ('workspace_keys', 'workspace_keys_enabled'); a list's count is the sum
-- of its rows.
INSERT INTO list_counts SELECT 'keys', organization_id, 0, count(*) FROM api_keys WHERE management = 0 GROUP BY organization_id;
INSERT INTO list_counts SELECT 'keys_enabled', organization_id, 0, count(*) FROM api_keys WHERE management = 0 AND disabled = 0 GROUP BY organization_id;
INSERT INTO list_counts SELECT 'workspace_keys', workspace_id, 0, count(*) FROM api_keys WHERE workspace_id IS NOT NULL GROUP BY workspace_id;
INSERT INTO list_counts SELECT 'workspace_keys_enabled', workspace_id, 0, count(*) FROM api_keys WHERE workspace_id IS NOT NULL AND disabled = 0 GROUP BY workspace_id;
CREATE TRIGGER api_keys_counted AFTER INSERT ON api_keys BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT list, scope, 0, 1 FROM (
            SELECT 'keys' AS list, NEW.organization_id AS scope WHERE NEW.management = 0
            UNION ALL SELECT 'keys_enabled', NEW.organization_id WHERE NEW.management = 0 AND NEW.disabled = 0
            UNION ALL SELECT 'workspace_keys', NEW.workspace_id WHERE NEW.workspace_id IS NOT NULL
            UNION ALL SELECT 'workspace_keys_enabled', NEW.workspace_id WHERE NEW.workspace_id IS NOT NULL AND NEW.disabled = 0)
        WHERE true
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER api_keys_uncounted AFTER DELETE ON api_keys BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'keys' AND scope = OLD.organization_id AND block = 0 AND OLD.management = 0;
    UPDATE list_counts SET n = n - 1 WHERE list = 'keys_enabled' AND scope = OLD.organization_id AND block = 0
        AND OLD.management = 0 AND OLD.disabled = 0;
    UPDATE list_counts SET n = n - 1 WHERE list = 'workspace_keys' AND scope = OLD.workspace_id AND block = 0;
    UPDATE list_counts SET n = n - 1 WHERE list = 'workspace_keys_enabled' AND scope = OLD.workspace_id AND block = 0
        AND OLD.disabled = 0;
END;
-- A key disabled or enabled (or moved: no path does, but the count would
-- follow) leaves the lists it was in and joins those it is in now.
CREATE TRIGGER api_keys_recounted AFTER UPDATE OF disabled, workspace_id, management, organization_id ON api_keys
WHEN OLD.disabled IS NOT NEW.disabled OR OLD.workspace_id IS NOT NEW.workspace_id
    OR OLD.management IS NOT NEW.management OR OLD.organization_id IS NOT NEW.organization_id BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'keys' AND scope = OLD.organization_id AND block = 0 AND OLD.management = 0;
    UPDATE list_counts SET n = n - 1 WHERE list = 'keys_enabled' AND scope = OLD.organization_id AND block = 0
        AND OLD.management = 0 AND OLD.disabled = 0;
    UPDATE list_counts SET n = n - 1 WHERE list = 'workspace_keys' AND scope = OLD.workspace_id AND block = 0;
    UPDATE list_counts SET n = n - 1 WHERE list = 'workspace_keys_enabled' AND scope = OLD.workspace_id AND block = 0
        AND OLD.disabled = 0;
    INSERT INTO list_counts (list, scope, block, n)
        SELECT list, scope, 0, 1 FROM (
            SELECT 'keys' AS list, NEW.organization_id AS scope WHERE NEW.management = 0
            UNION ALL SELECT 'keys_enabled', NEW.organization_id WHERE NEW.management = 0 AND NEW.disabled = 0
            UNION ALL SELECT 'workspace_keys', NEW.workspace_id WHERE NEW.workspace_id IS NOT NULL
            UNION ALL SELECT 'workspace_keys_enabled', NEW.workspace_id WHERE NEW.workspace_id IS NOT NULL AND NEW.disabled = 0)
        WHERE true
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + excluded.n;
END;
