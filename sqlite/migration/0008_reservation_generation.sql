-- A reservation names the ledger entry its call will be recorded as: when a
-- crash leaves it open, it is charged under that id (the one its client
-- saw), model and provider, at the reserved amount.
ALTER TABLE reservations ADD COLUMN generation_id TEXT;
ALTER TABLE reservations ADD COLUMN workspace_id TEXT;
ALTER TABLE reservations ADD COLUMN model TEXT;
ALTER TABLE reservations ADD COLUMN provider TEXT;
ALTER TABLE reservations ADD COLUMN streamed BOOLEAN NOT NULL DEFAULT FALSE;
