-- The number of rows of the lists that grow to millions, kept by triggers
-- (issue 30): an organization's members, its audit log, its key and member
-- assignments. A list's total_count is read from here (sqlstore:
-- findKeptCountPage) instead of counting its rows, which at a million rows read
-- the table (PostgreSQL chose a sequential scan: 1.1 s) or its index whole.
-- A list's count is the sum of its rows here (scope: the organization).
-- The rows of a deleted organization stay, with nothing reading them.
INSERT INTO list_counts SELECT 'members', organization_id, 0, count(*) FROM members GROUP BY organization_id;
CREATE TRIGGER members_counted AFTER INSERT ON members BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('members', NEW.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER members_uncounted AFTER DELETE ON members BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'members' AND scope = OLD.organization_id AND block = 0;
END;
INSERT INTO list_counts SELECT 'audit_log', organization_id, 0, count(*) FROM audit_log GROUP BY organization_id;
CREATE TRIGGER audit_log_counted AFTER INSERT ON audit_log BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('audit_log', NEW.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER audit_log_uncounted AFTER DELETE ON audit_log BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'audit_log' AND scope = OLD.organization_id AND block = 0;
END;
INSERT INTO list_counts SELECT 'key_assignments', organization_id, 0, count(*) FROM key_assignments GROUP BY organization_id;
CREATE TRIGGER key_assignments_counted AFTER INSERT ON key_assignments BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('key_assignments', NEW.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER key_assignments_uncounted AFTER DELETE ON key_assignments BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'key_assignments' AND scope = OLD.organization_id AND block = 0;
END;
INSERT INTO list_counts SELECT 'member_assignments', organization_id, 0, count(*) FROM member_assignments GROUP BY organization_id;
CREATE TRIGGER member_assignments_counted AFTER INSERT ON member_assignments BEGIN
    INSERT INTO list_counts (list, scope, block, n) VALUES ('member_assignments', NEW.organization_id, 0, 1)
        ON CONFLICT (list, scope, block) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER member_assignments_uncounted AFTER DELETE ON member_assignments BEGIN
    UPDATE list_counts SET n = n - 1 WHERE list = 'member_assignments' AND scope = OLD.organization_id AND block = 0;
END;
