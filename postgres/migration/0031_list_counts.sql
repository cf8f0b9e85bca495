-- The number of rows of the lists that grow to millions, kept by triggers
-- (issue 30): an organization's members, its audit log, its key and member
-- assignments. A list's total_count is read from here (sqlstore:
-- findKeptCountPage) instead of counting its rows, which at a million rows read
-- the table (PostgreSQL chose a sequential scan: 1.1 s) or its index whole.
-- A list's count is the sum of its rows here (scope: the organization).
-- The rows of a deleted organization stay, with nothing reading them.
-- On PostgreSQL a statement adds its rows' count to one of list_counts'
-- blocks at random; a bulk COPY counts once.
CREATE FUNCTION gatehouse_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT TG_ARGV[0], organization_id, floor(random() * 16)::int, count(*) FROM counted_rows GROUP BY organization_id
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE FUNCTION gatehouse_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT TG_ARGV[0], organization_id, floor(random() * 16)::int, -count(*) FROM counted_rows GROUP BY organization_id
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
INSERT INTO list_counts SELECT 'members', organization_id, 0, count(*) FROM members GROUP BY organization_id;
CREATE TRIGGER members_counted AFTER INSERT ON members
    REFERENCING NEW TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_inserted('members');
CREATE TRIGGER members_uncounted AFTER DELETE ON members
    REFERENCING OLD TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_deleted('members');
INSERT INTO list_counts SELECT 'audit_log', organization_id, 0, count(*) FROM audit_log GROUP BY organization_id;
CREATE TRIGGER audit_log_counted AFTER INSERT ON audit_log
    REFERENCING NEW TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_inserted('audit_log');
CREATE TRIGGER audit_log_uncounted AFTER DELETE ON audit_log
    REFERENCING OLD TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_deleted('audit_log');
INSERT INTO list_counts SELECT 'key_assignments', organization_id, 0, count(*) FROM key_assignments GROUP BY organization_id;
CREATE TRIGGER key_assignments_counted AFTER INSERT ON key_assignments
    REFERENCING NEW TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_inserted('key_assignments');
CREATE TRIGGER key_assignments_uncounted AFTER DELETE ON key_assignments
    REFERENCING OLD TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_deleted('key_assignments');
INSERT INTO list_counts SELECT 'member_assignments', organization_id, 0, count(*) FROM member_assignments GROUP BY organization_id;
CREATE TRIGGER member_assignments_counted AFTER INSERT ON member_assignments
    REFERENCING NEW TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_inserted('member_assignments');
CREATE TRIGGER member_assignments_uncounted AFTER DELETE ON member_assignments
    REFERENCING OLD TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_count_deleted('member_assignments');
