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
    UNION ALL SELECT 'guardrail_member_assignments', guardrail_id, created_at, id FROM member_assignments;

-- A guardrail's assignments are counted as the organization's are.
INSERT INTO list_counts SELECT 'guardrail_key_assignments', guardrail_id, 0, count(*) FROM key_assignments GROUP BY guardrail_id;
INSERT INTO list_counts SELECT 'guardrail_member_assignments', guardrail_id, 0, count(*) FROM member_assignments GROUP BY guardrail_id;

CREATE TRIGGER key_assignments_blocked AFTER INSERT ON key_assignments BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('guardrail_key_assignments', NEW.guardrail_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
    INSERT INTO list_moves VALUES ('key_assignments', 'key_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1),
        ('guardrail_key_assignments', 'guardrail_key_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER key_assignments_unblocked AFTER DELETE ON key_assignments BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'guardrail_key_assignments' AND scope = OLD.guardrail_id AND block = 0;
    INSERT INTO list_moves VALUES ('key_assignments', 'key_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('guardrail_key_assignments', 'guardrail_key_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1);
    INSERT INTO anchor_removals VALUES ('key_assignments', OLD.organization_id, OLD.created_at, OLD.id),
        ('guardrail_key_assignments', OLD.guardrail_id, OLD.created_at, OLD.id);
END;
-- A key moved to another guardrail: its assignment leaves each list it
-- was in (a list whose scope or place of the row changed) and joins it again.
CREATE TRIGGER key_assignments_reblocked AFTER UPDATE OF guardrail_id, created_at, id ON key_assignments
WHEN OLD.guardrail_id IS NOT NEW.guardrail_id OR OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'guardrail_key_assignments' AND scope = OLD.guardrail_id AND block = 0;
    INSERT INTO list_counts (list, scope, block, n) VALUES ('guardrail_key_assignments', NEW.guardrail_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
    INSERT INTO list_moves
        SELECT 'key_assignments', 'key_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1
            WHERE OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id
        UNION ALL SELECT 'guardrail_key_assignments', 'guardrail_key_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1;
    INSERT INTO anchor_removals
        SELECT 'key_assignments', OLD.organization_id, OLD.created_at, OLD.id WHERE OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id
        UNION ALL SELECT 'guardrail_key_assignments', OLD.guardrail_id, OLD.created_at, OLD.id;
    INSERT INTO list_moves
        SELECT 'key_assignments', 'key_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1
            WHERE OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id
        UNION ALL SELECT 'guardrail_key_assignments', 'guardrail_key_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1;
END;
CREATE TRIGGER key_assignments_placed BEFORE UPDATE OF organization_id ON key_assignments
WHEN OLD.organization_id IS NOT NEW.organization_id BEGIN
    SELECT RAISE(ABORT, 'an assignment''s organization does not change');
END;

CREATE TRIGGER member_assignments_blocked AFTER INSERT ON member_assignments BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('guardrail_member_assignments', NEW.guardrail_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
    INSERT INTO list_moves VALUES ('member_assignments', 'member_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1),
        ('guardrail_member_assignments', 'guardrail_member_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1);
END;
CREATE TRIGGER member_assignments_unblocked AFTER DELETE ON member_assignments BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'guardrail_member_assignments' AND scope = OLD.guardrail_id AND block = 0;
    INSERT INTO list_moves VALUES ('member_assignments', 'member_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1),
        ('guardrail_member_assignments', 'guardrail_member_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1);
    INSERT INTO anchor_removals VALUES ('member_assignments', OLD.organization_id, OLD.created_at, OLD.id),
        ('guardrail_member_assignments', OLD.guardrail_id, OLD.created_at, OLD.id);
END;
CREATE TRIGGER member_assignments_reblocked AFTER UPDATE OF guardrail_id, created_at, id ON member_assignments
WHEN OLD.guardrail_id IS NOT NEW.guardrail_id OR OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'guardrail_member_assignments' AND scope = OLD.guardrail_id AND block = 0;
    INSERT INTO list_counts (list, scope, block, n) VALUES ('guardrail_member_assignments', NEW.guardrail_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
    INSERT INTO list_moves
        SELECT 'member_assignments', 'member_assignments', OLD.organization_id, OLD.created_at, OLD.id, -1
            WHERE OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id
        UNION ALL SELECT 'guardrail_member_assignments', 'guardrail_member_assignments', OLD.guardrail_id, OLD.created_at, OLD.id, -1;
    INSERT INTO anchor_removals
        SELECT 'member_assignments', OLD.organization_id, OLD.created_at, OLD.id WHERE OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id
        UNION ALL SELECT 'guardrail_member_assignments', OLD.guardrail_id, OLD.created_at, OLD.id;
    INSERT INTO list_moves
        SELECT 'member_assignments', 'member_assignments', NEW.organization_id, NEW.created_at, NEW.id, 1
            WHERE OLD.created_at IS NOT NEW.created_at OR OLD.id IS NOT NEW.id
        UNION ALL SELECT 'guardrail_member_assignments', 'guardrail_member_assignments', NEW.guardrail_id, NEW.created_at, NEW.id, 1;
END;
CREATE TRIGGER member_assignments_placed BEFORE UPDATE OF organization_id ON member_assignments
WHEN OLD.organization_id IS NOT NEW.organization_id BEGIN
    SELECT RAISE(ABORT, 'an assignment''s organization does not change');
END;
