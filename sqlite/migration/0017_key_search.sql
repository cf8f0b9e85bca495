-- The web console pages through millions of keys without counting or
-- skipping any (sqlstore/keysearch.go): each page is one walk along an
-- index from a cursor.
--
-- A search by the start of a name runs over the names folded as
-- gatehouse.FoldKeyName does: lower() folds ASCII letters only. The folded
-- name is a virtual column (computed, never stored) so that the cursor's
-- row value (name_folded, hash) > (?, ?) seeks in the index: SQLite seeks
-- with row values of columns, not of expressions. api_keys_name_search
-- serves an admin's search, api_keys_creator_name a member's (their own
-- keys), api_keys_creator_list a member's keys newest first; the last
-- begins with the columns of api_keys_org_creator, which it replaces.
ALTER TABLE api_keys ADD COLUMN name_folded TEXT GENERATED ALWAYS AS (lower(name)) VIRTUAL;
CREATE INDEX api_keys_name_search ON api_keys (organization_id, name_folded, hash) WHERE management = FALSE;
CREATE INDEX api_keys_creator_name ON api_keys (organization_id, creator_user_id, name_folded, hash);
CREATE INDEX api_keys_creator_list ON api_keys (organization_id, creator_user_id, created_at, hash);
DROP INDEX api_keys_org_creator;
