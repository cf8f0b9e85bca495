-- The kept counts of the lists (list_counts, migrations 0030, 0031, 0051)
-- are spread over parts so that concurrent writes seldom update the same
-- row: under SERIALIZABLE, two transactions that update one row conflict,
-- and the second is retried. A statement chose one of 16 parts at random:
-- 32 clients making keys in one organization (at most 16 transactions at
-- once, one a connection of the pool) update six counts each, and almost
-- every transaction met another on one of them: about one retry for each
-- key made. The part is now the writing connection's (its backend's pid,
-- among 64): the connections of a pool, whose pids are mostly consecutive,
-- write counts of their own, and two transactions meet on a count only
-- when their backends' pids are 64 apart. A count is the sum of its parts,
-- as before; the parts written before stay.
CREATE FUNCTION gatehouse_part() RETURNS INT LANGUAGE sql STABLE AS $$
    SELECT pg_backend_pid() % 64
$$;

CREATE OR REPLACE FUNCTION gatehouse_key_list_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT 'key_list_version', organization_id, gatehouse_part(), 1 FROM changed_keys WHERE NOT management GROUP BY organization_id
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + 1;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION gatehouse_key_list_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT 'key_list_version', org, gatehouse_part(), 1 FROM (VALUES (OLD.organization_id), (NEW.organization_id)) o (org) GROUP BY org
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + 1;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION gatehouse_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT TG_ARGV[0], organization_id, gatehouse_part(), count(*) FROM counted_rows GROUP BY organization_id
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION gatehouse_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT TG_ARGV[0], organization_id, gatehouse_part(), -count(*) FROM counted_rows GROUP BY organization_id
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION gatehouse_keys_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT l.list, l.scope, gatehouse_part(), CASE TG_OP WHEN 'DELETE' THEN -count(*) ELSE count(*) END
        FROM counted_keys k CROSS JOIN LATERAL gatehouse_key_lists(k.organization_id, k.workspace_id, k.management, k.disabled) l
        GROUP BY l.list, l.scope
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION gatehouse_keys_recounted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts (list, scope, block, n)
        SELECT list, scope, gatehouse_part(), sum(n) FROM (
            SELECT list, scope, -1 AS n FROM gatehouse_key_lists(OLD.organization_id, OLD.workspace_id, OLD.management, OLD.disabled)
            UNION ALL
            SELECT list, scope, 1 FROM gatehouse_key_lists(NEW.organization_id, NEW.workspace_id, NEW.management, NEW.disabled)) moved
        GROUP BY list, scope HAVING sum(n) <> 0
        ON CONFLICT (list, scope, block) DO UPDATE SET n = list_counts.n + excluded.n;
    RETURN NULL;
END
$$;
