-- PostgreSQL announces guardrail changes to the other instances here (see
-- postgres/migration/0008_guardrail_changes.sql). A SQLite database has
-- one server, through whose cache every write goes: nothing to announce.
SELECT 1;
