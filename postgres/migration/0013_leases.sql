-- Leases (PostgreSQL, where instances share the database): a reservation
-- with lease set is a slice of its key's and budgets' remainder that one
-- instance admits requests against in memory. The holds of those requests
-- name it in lease_id: the lease already counts them, so the sums of what
-- is held leave them out, and a settle takes its cost off the lease as it
-- adds it to the counters. A lease is never charged: when its instance is
-- gone, or it expires, it is dropped (its holds are charged on their own).
ALTER TABLE reservations ADD COLUMN lease BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE reservations ADD COLUMN lease_id TEXT;
