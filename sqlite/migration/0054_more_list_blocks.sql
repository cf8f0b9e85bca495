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
-- Such a list's triggers write list_changes: a row joins (d = 1) or
-- leaves (d = -1) a list; its count, its block and, for a row that leaves,
-- its anchor follow. (Destinations, at most 5 of each type in a workspace,
-- and BYOK keys, at most 50 of a provider, stay short lists.)
INSERT INTO list_bases VALUES ('key_assignments', 'key_assignments'),
    ('guardrail_key_assignments', 'guardrail_key_assignments'),
    ('member_assignments', 'member_assignments'),
    ('guardrail_member_assignments', 'guardrail_member_assignments'),
    ('workspaces', 'workspaces'), ('guardrails', 'guardrails'),
    ('workspace_members', 'workspace_members'), ('presets', 'presets'),
    ('credit_grants', 'credit_grants'), ('sso_providers', 'sso_providers'),
    ('group_mappings', 'group_mappings'), ('scim_groups', 'scim_groups'),
    ('invitations', 'invitations');

DROP VIEW list_rows;
CREATE VIEW list_rows (list, scope, at, id) AS
    SELECT 'keys', organization_id, created_at, hash FROM api_keys WHERE management = 0
    UNION ALL SELECT 'keys_enabled', organization_id, created_at, hash FROM api_keys WHERE management = 0 AND disabled = 0
    UNION ALL SELECT 'workspace_keys', workspace_id, created_at, hash FROM api_keys WHERE workspace_id IS NOT NULL
    UNION ALL SELECT 'workspace_keys_enabled', workspace_id, created_at, hash FROM api_keys
        WHERE workspace_id IS NOT NULL AND disabled = 0
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

CREATE VIEW list_changes (list, scope, at, id, d) AS SELECT '', '', 0, '', 0 WHERE 0;
CREATE TRIGGER list_changed INSTEAD OF INSERT ON list_changes BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES (NEW.list, NEW.scope, 0, NEW.d)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + excluded.n;
    INSERT INTO list_moves VALUES (NEW.list, NEW.list, NEW.scope, NEW.at, NEW.id, NEW.d);
    INSERT INTO anchor_removals SELECT NEW.list, NEW.scope, NEW.at, NEW.id WHERE NEW.d < 0;
END;

-- The counts of the lists, from here on kept by list_changes.
DROP TRIGGER key_assignments_counted;
DROP TRIGGER key_assignments_uncounted;
DROP TRIGGER member_assignments_counted;
DROP TRIGGER member_assignments_uncounted;
DELETE FROM list_counts WHERE list IN ('key_assignments', 'member_assignments');
INSERT INTO list_counts SELECT list, scope, 0, count(*) FROM list_rows
    WHERE list IN ('key_assignments', 'guardrail_key_assignments', 'member_assignments', 'guardrail_member_assignments',
        'workspaces', 'guardrails', 'workspace_members', 'presets', 'credit_grants', 'sso_providers', 'group_mappings', 'scim_groups',
        'invitations')
    GROUP BY list, scope;

CREATE TRIGGER key_assignments_listed AFTER INSERT ON key_assignments BEGIN
    INSERT INTO list_changes VALUES ('key_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1),
        ('guardrail_key_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER key_assignments_unlisted AFTER DELETE ON key_assignments BEGIN
    INSERT INTO list_changes VALUES ('key_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('guardrail_key_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER key_assignments_relisted AFTER UPDATE OF organization_id, guardrail_id, created_at, id ON key_assignments BEGIN
    INSERT INTO list_changes
        SELECT 'key_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1
            WHERE (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id)
        UNION ALL SELECT 'guardrail_key_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1
            WHERE (OLD.guardrail_id, OLD.created_at, OLD.id) IS NOT (NEW.guardrail_id, NEW.created_at, NEW.id);
    INSERT INTO list_changes
        SELECT 'key_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1
            WHERE (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id)
        UNION ALL SELECT 'guardrail_key_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1
            WHERE (OLD.guardrail_id, OLD.created_at, OLD.id) IS NOT (NEW.guardrail_id, NEW.created_at, NEW.id);
END;

CREATE TRIGGER member_assignments_listed AFTER INSERT ON member_assignments BEGIN
    INSERT INTO list_changes VALUES ('member_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1),
        ('guardrail_member_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER member_assignments_unlisted AFTER DELETE ON member_assignments BEGIN
    INSERT INTO list_changes VALUES ('member_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('guardrail_member_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER member_assignments_relisted AFTER UPDATE OF organization_id, guardrail_id, created_at, id ON member_assignments BEGIN
    INSERT INTO list_changes
        SELECT 'member_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1
            WHERE (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id)
        UNION ALL SELECT 'guardrail_member_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1
            WHERE (OLD.guardrail_id, OLD.created_at, OLD.id) IS NOT (NEW.guardrail_id, NEW.created_at, NEW.id);
    INSERT INTO list_changes
        SELECT 'member_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1
            WHERE (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id)
        UNION ALL SELECT 'guardrail_member_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1
            WHERE (OLD.guardrail_id, OLD.created_at, OLD.id) IS NOT (NEW.guardrail_id, NEW.created_at, NEW.id);
END;

CREATE TRIGGER workspaces_listed AFTER INSERT ON workspaces BEGIN
    INSERT INTO list_changes VALUES ('workspaces', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER workspaces_unlisted AFTER DELETE ON workspaces BEGIN
    INSERT INTO list_changes VALUES ('workspaces', OLD.organization_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER workspaces_relisted AFTER UPDATE OF organization_id, created_at, id ON workspaces
WHEN (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('workspaces', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('workspaces', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;

CREATE TRIGGER guardrails_listed AFTER INSERT ON guardrails BEGIN
    INSERT INTO list_changes VALUES ('guardrails', NEW.workspace_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER guardrails_unlisted AFTER DELETE ON guardrails BEGIN
    INSERT INTO list_changes VALUES ('guardrails', OLD.workspace_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER guardrails_relisted AFTER UPDATE OF workspace_id, created_at, id ON guardrails
WHEN (OLD.workspace_id, OLD.created_at, OLD.id) IS NOT (NEW.workspace_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('guardrails', OLD.workspace_id, OLD.created_at, OLD.id, -1),
        ('guardrails', NEW.workspace_id, NEW.created_at, NEW.id, 1);
END;

CREATE TRIGGER workspace_members_listed AFTER INSERT ON workspace_members BEGIN
    INSERT INTO list_changes VALUES ('workspace_members', NEW.workspace_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER workspace_members_unlisted AFTER DELETE ON workspace_members BEGIN
    INSERT INTO list_changes VALUES ('workspace_members', OLD.workspace_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER workspace_members_relisted AFTER UPDATE OF workspace_id, created_at, id ON workspace_members
WHEN (OLD.workspace_id, OLD.created_at, OLD.id) IS NOT (NEW.workspace_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('workspace_members', OLD.workspace_id, OLD.created_at, OLD.id, -1),
        ('workspace_members', NEW.workspace_id, NEW.created_at, NEW.id, 1);
END;

CREATE TRIGGER presets_listed AFTER INSERT ON presets BEGIN
    INSERT INTO list_changes VALUES ('presets', NEW.workspace_id, NEW.updated_at, NEW.id, 1);
END;
CREATE TRIGGER presets_unlisted AFTER DELETE ON presets BEGIN
    INSERT INTO list_changes VALUES ('presets', OLD.workspace_id, OLD.updated_at, OLD.id, -1);
END;
CREATE TRIGGER presets_relisted AFTER UPDATE OF workspace_id, updated_at, id ON presets
WHEN (OLD.workspace_id, OLD.updated_at, OLD.id) IS NOT (NEW.workspace_id, NEW.updated_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('presets', OLD.workspace_id, OLD.updated_at, OLD.id, -1),
        ('presets', NEW.workspace_id, NEW.updated_at, NEW.id, 1);
END;

CREATE TRIGGER credit_grants_listed AFTER INSERT ON credit_grants BEGIN
    INSERT INTO list_changes VALUES ('credit_grants', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER credit_grants_unlisted AFTER DELETE ON credit_grants BEGIN
    INSERT INTO list_changes VALUES ('credit_grants', OLD.organization_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER credit_grants_relisted AFTER UPDATE OF organization_id, created_at, id ON credit_grants
WHEN (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('credit_grants', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('credit_grants', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;

CREATE TRIGGER sso_providers_listed AFTER INSERT ON sso_providers BEGIN
    INSERT INTO list_changes VALUES ('sso_providers', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER sso_providers_unlisted AFTER DELETE ON sso_providers BEGIN
    INSERT INTO list_changes VALUES ('sso_providers', OLD.organization_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER sso_providers_relisted AFTER UPDATE OF organization_id, created_at, id ON sso_providers
WHEN (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('sso_providers', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('sso_providers', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;

CREATE TRIGGER group_mappings_listed AFTER INSERT ON group_mappings BEGIN
    INSERT INTO list_changes VALUES ('group_mappings', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER group_mappings_unlisted AFTER DELETE ON group_mappings BEGIN
    INSERT INTO list_changes VALUES ('group_mappings', OLD.organization_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER group_mappings_relisted AFTER UPDATE OF organization_id, created_at, id ON group_mappings
WHEN (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('group_mappings', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('group_mappings', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;

CREATE TRIGGER scim_groups_listed AFTER INSERT ON scim_groups BEGIN
    INSERT INTO list_changes VALUES ('scim_groups', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER scim_groups_unlisted AFTER DELETE ON scim_groups BEGIN
    INSERT INTO list_changes VALUES ('scim_groups', OLD.organization_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER scim_groups_relisted AFTER UPDATE OF organization_id, created_at, id ON scim_groups
WHEN (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id) BEGIN
    INSERT INTO list_changes VALUES ('scim_groups', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('scim_groups', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;

-- A link used leaves the list of unused links.
CREATE TRIGGER invitations_listed AFTER INSERT ON invitations WHEN NEW.used_at IS NULL BEGIN
    INSERT INTO list_changes VALUES ('invitations', NEW.organization_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER invitations_unlisted AFTER DELETE ON invitations WHEN OLD.used_at IS NULL BEGIN
    INSERT INTO list_changes VALUES ('invitations', OLD.organization_id, OLD.created_at, OLD.id, -1);
END;
CREATE TRIGGER invitations_relisted AFTER UPDATE OF organization_id, created_at, id, used_at ON invitations
WHEN (OLD.used_at IS NULL) IS NOT (NEW.used_at IS NULL)
    OR (OLD.used_at IS NULL AND (OLD.organization_id, OLD.created_at, OLD.id) IS NOT (NEW.organization_id, NEW.created_at, NEW.id)) BEGIN
    INSERT INTO list_changes SELECT 'invitations', OLD.organization_id, OLD.created_at, OLD.id, -1 WHERE OLD.used_at IS NULL;
    INSERT INTO list_changes SELECT 'invitations', NEW.organization_id, NEW.created_at, NEW.id, 1 WHERE NEW.used_at IS NULL;
END;
