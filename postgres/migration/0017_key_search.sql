-- The web console pages through millions of keys without counting or
-- skipping any (sqlstore/keysearch.go): each page is one walk along an
-- index from a cursor.
--
-- A search by the start of a name runs over the names folded as
-- gatehouse.FoldKeyName does: lower() under the "C" collation folds ASCII
-- letters only and orders by bytes, as SQLite's does (which keeps the
-- folded name in a virtual column, name_folded; here the indexes hold the
-- expression). api_keys_name_search serves an admin's search,
-- api_keys_creator_name a member's (their own keys), api_keys_creator_list
-- a member's keys newest first; the last begins with the columns of
-- api_keys_org_creator, which it replaces.
CREATE INDEX api_keys_name_search ON api_keys (organization_id, lower(name COLLATE "C"), hash) WHERE management = FALSE;
CREATE INDEX api_keys_creator_name ON api_keys (organization_id, creator_user_id, lower(name COLLATE "C"), hash);
CREATE INDEX api_keys_creator_list ON api_keys (organization_id, creator_user_id, created_at, hash);
DROP INDEX api_keys_org_creator;
