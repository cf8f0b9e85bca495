-- A key minted through OAuth from a regular key's authorization code keeps
-- that key's hash: what it spends, its parent (and the parent's parent...)
-- spends too. No foreign key: a deleted parent leaves its hash behind, and
-- the minted key can no longer spend.
ALTER TABLE api_keys ADD COLUMN parent_key_hash TEXT;

-- The other keys a reservation holds against besides its own: the chain of
-- keys its key was minted from, depth 1 for the parent.
CREATE TABLE reservation_holds (
    reservation_id TEXT NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    key_hash       TEXT NOT NULL,
    depth          BIGINT NOT NULL,
    PRIMARY KEY (reservation_id, key_hash)
);
CREATE INDEX reservation_holds_key ON reservation_holds (key_hash);

-- A minted key's request holds against the budgets of its chain: one
-- guardrail (the workspace default, say) can count it for several subjects.
ALTER TABLE reservation_budgets DROP CONSTRAINT reservation_budgets_pkey;
ALTER TABLE reservation_budgets ADD PRIMARY KEY (reservation_id, guardrail_id, subject);
