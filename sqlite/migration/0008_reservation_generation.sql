-- A reservation names the ledger entry its call will be recorded as: when a
-- crash leaves it open, it is charged under that id (the one its client
-- saw), model and provider, at the reserved amount. instance_id names the
-- process that holds it (PostgreSQL): once that process is gone, its
-- reservations are charged at once.
ALTER TABLE reservations ADD COLUMN generation_id TEXT;
ALTER TABLE reservations ADD COLUMN workspace_id TEXT;
ALTER TABLE reservations ADD COLUMN model TEXT;
ALTER TABLE reservations ADD COLUMN provider TEXT;
ALTER TABLE reservations ADD COLUMN streamed BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE reservations ADD COLUMN instance_id TEXT;
