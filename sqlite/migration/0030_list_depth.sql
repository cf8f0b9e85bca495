-- Lists at any depth (issue 30). Every page of a list is found in an index
-- that holds the list's filter and order, skipping the rows before it
-- without reading the table (sqlstore.PageQuery), and the keys API's pages
-- walk on from where the previous page ended (sqlstore/keylist.go).
--
-- The keys API lists the enabled keys unless asked for all: an index that
-- holds `disabled` (partial: only the enabled ones), by organization and
-- by workspace.
CREATE INDEX api_keys_enabled_list ON api_keys (organization_id, created_at, hash) WHERE management = FALSE AND disabled = FALSE;
CREATE INDEX api_keys_enabled_workspace ON api_keys (workspace_id, created_at, hash) WHERE disabled = FALSE;
-- SQLite reads a row from the table for a column of a partial index's
-- condition unless the index holds it: the live destinations, and the
-- usable invitations (expires_at compared in the index too).
CREATE INDEX destinations_live ON destinations (workspace_id, created_at, id, deleted_at) WHERE deleted_at IS NULL;
DROP INDEX destinations_list;
CREATE INDEX invitations_usable ON invitations (organization_id, created_at, id, expires_at, used_at) WHERE used_at IS NULL;
-- A provider's BYOK keys, and the audit log of an actor (a key or a
-- member: either column) compared in the index.
CREATE INDEX byok_keys_provider_list ON byok_keys (workspace_id, provider, created_at, id);
CREATE INDEX audit_log_actors ON audit_log (organization_id, at, id, actor_key_hash, actor_user_id);

-- list_counts keeps numbers of rows of lists, by the list's name and scope
-- (an organization), each the sum of its blocks (PostgreSQL spreads
-- concurrent writes over blocks); Copy leaves it to the target's triggers.
CREATE TABLE list_counts (
    list  TEXT NOT NULL,
    scope TEXT NOT NULL,
    block INTEGER NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (list, scope, block)
) WITHOUT ROWID;

-- key_list_version grows whenever an organization's list of regular keys
-- changes (a key made, deleted, disabled or enabled): where a page of the
-- keys API ended is remembered under it, and forgotten when it changes.
CREATE TRIGGER api_keys_list_insert AFTER INSERT ON api_keys WHEN NEW.management = 0 BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('key_list_version', NEW.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER api_keys_list_delete AFTER DELETE ON api_keys WHEN OLD.management = 0 BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('key_list_version', OLD.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER api_keys_list_update AFTER UPDATE OF disabled, workspace_id, created_at, management, organization_id ON api_keys
WHEN OLD.disabled IS NOT NEW.disabled OR OLD.workspace_id IS NOT NEW.workspace_id OR OLD.created_at IS NOT NEW.created_at
    OR OLD.management IS NOT NEW.management OR OLD.organization_id IS NOT NEW.organization_id BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('key_list_version', OLD.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
    INSERT INTO list_counts (list, scope, block, n) VALUES ('key_list_version', NEW.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
