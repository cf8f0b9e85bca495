-- SQLite rebuilds its one-default index on `is_default = TRUE` here (see
-- sqlite/migration/0007_default_workspace_index.sql). PostgreSQL reads
-- `is_default = TRUE` as `is_default`, which its index already names:
-- nothing changes.
SELECT 1;
