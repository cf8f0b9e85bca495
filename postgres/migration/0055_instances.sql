-- The instances that hold reservations on this database, each under its
-- session advisory lock (postgres/instance.go). Every instance looks every
-- second for instances that are gone, to charge what they left open; it
-- found them with SELECT DISTINCT instance_id FROM reservations, a
-- sequential scan of a table written twice a call (about 18 ms a look at
-- 2,400 calls a second: a tenth of the database's time). An instance now
-- writes its name here when it starts; a row is deleted once its instance
-- is gone and nothing of it is left open. The instances that hold open
-- reservations today are written here at the upgrade.
CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    started_at BIGINT NOT NULL
);
INSERT INTO instances (id, started_at)
    SELECT DISTINCT instance_id, 0 FROM reservations WHERE instance_id IS NOT NULL;
