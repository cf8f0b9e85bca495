-- The instances that hold reservations on a shared database (see
-- postgres/migration/0055_instances.sql). A SQLite database has one
-- process, which charges what the last one left open when it starts: the
-- table stays empty, and is here so that both engines have the same tables.
CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    started_at INTEGER NOT NULL
) WITHOUT ROWID;
