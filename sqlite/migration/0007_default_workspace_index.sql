-- The store compares booleans as `column = TRUE` in both engines, and
-- SQLite uses a partial index only for a query term that matches its WHERE
-- clause: the one-default index is rebuilt on `is_default = TRUE` (it was
-- `= 1`, which the query no longer spells; finding a default workspace
-- then scanned every workspace of the organization).
DROP INDEX workspaces_one_default;
CREATE UNIQUE INDEX workspaces_one_default ON workspaces (organization_id) WHERE is_default = TRUE;
