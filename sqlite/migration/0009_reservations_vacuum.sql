-- PostgreSQL tunes autovacuum for the reservation tables here (see
-- postgres/migration/0009_reservations_vacuum.sql); SQLite has nothing to
-- tune.
SELECT 1;
