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
-- The usable invitations: not used, and expires_at compared in the index.
CREATE INDEX invitations_usable ON invitations (organization_id, created_at, id, expires_at) WHERE used_at IS NULL;
-- A provider's BYOK keys, and the audit log of an actor (a key or a
-- member: either column) compared in the index.
CREATE INDEX byok_keys_provider_list ON byok_keys (workspace_id, provider, created_at, id);
CREATE INDEX audit_log_actors ON audit_log (organization_id, at, id, actor_key_hash, actor_user_id);

-- list_counts keeps numbers of rows of lists, by the list's name and scope
-- (an organization), each the sum of its blocks: a statement adds to one of
-- 16 blocks at random, so that concurrent writes of one organization seldom
-- wait on one row. Copy leaves it to the target's triggers.
CREATE TABLE list_counts (
    list  TEXT NOT NULL,
    scope TEXT NOT NULL,
    block INTEGER NOT NULL,
    n     BIGINT NOT NULL,
    PRIMARY KEY (list, scope, block)
);

-- key_list_version grows whenever an organization's list of regular keys
-- changes (a key made, deleted, disabled or enabled): where a page of the
-- keys API ended is remembered under it, and forgotten when it changes.
-- Made and deleted keys count once a statement (a bulk COPY of a million
-- keys adds once).
CREATE FUNCTION gatehouse_key_list_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT 'key_list_version', organization_id, floor(random() * 16)::int, 1 FROM changed_keys WHERE NOT management GROUP BY organization_id
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_list_insert AFTER INSERT ON api_keys
    REFERENCING NEW TABLE AS changed_keys FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_key_list_changed();
CREATE TRIGGER api_keys_list_delete AFTER DELETE ON api_keys
    REFERENCING OLD TABLE AS changed_keys FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_key_list_changed();
CREATE FUNCTION gatehouse_key_list_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT 'key_list_version', org, floor(random() * 16)::int, 1 FROM (VALUES (OLD.organization_id), (NEW.organization_id)) o (org) GROUP BY org
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_list_update AFTER UPDATE OF disabled, workspace_id, created_at, management, organization_id ON api_keys
    FOR EACH ROW WHEN (OLD.disabled IS DISTINCT FROM NEW.disabled OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.management IS DISTINCT FROM NEW.management
        OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
    EXECUTE FUNCTION gatehouse_key_list_moved();
