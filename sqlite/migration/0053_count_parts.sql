-- PostgreSQL spreads the kept counts of the lists over parts chosen by the
-- writing connection here (see postgres/migration/0053_count_parts.sql). A
-- SQLite database has one writer: its counts have one part.
SELECT 1;
