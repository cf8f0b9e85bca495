-- A reservation outlives its key. A call still running when its key is
-- deleted (a stream, say) is settled after the deletion, and its cost must
-- still reach the ledger, the keys its key was minted from, its budgets and
-- the organization's credits. The cascade from api_keys deleted the
-- reservation with the key, so the settle found nothing to end and charged
-- nothing. Without the foreign key the reservation stays until it is
-- settled, released or charged at its expiry; only the deleted key's own
-- counters, gone with it, are not charged.
--
-- SQLite changes a foreign key only by making the table again. Dropping the
-- old table deletes the rows that refer to it (their cascade), so those are
-- kept aside and put back.
CREATE TABLE reservations_new (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    key_hash        TEXT NOT NULL,
    amount          BIGINT NOT NULL,
    byok            INTEGER NOT NULL,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    generation_id   TEXT,
    workspace_id    TEXT,
    model           TEXT,
    provider        TEXT,
    streamed        BOOLEAN NOT NULL DEFAULT FALSE,
    instance_id     TEXT,
    lease           BOOLEAN NOT NULL DEFAULT FALSE,
    lease_id        TEXT
);
INSERT INTO reservations_new (id, organization_id, key_hash, amount, byok, created_at, expires_at,
        generation_id, workspace_id, model, provider, streamed, instance_id, lease, lease_id)
    SELECT id, organization_id, key_hash, amount, byok, created_at, expires_at,
        generation_id, workspace_id, model, provider, streamed, instance_id, lease, lease_id
    FROM reservations;
CREATE TABLE reservation_holds_kept AS SELECT reservation_id, key_hash, depth FROM reservation_holds;
CREATE TABLE reservation_budgets_kept AS SELECT reservation_id, guardrail_id, subject FROM reservation_budgets;
DROP TABLE reservations;
ALTER TABLE reservations_new RENAME TO reservations;
INSERT INTO reservation_holds (reservation_id, key_hash, depth)
    SELECT reservation_id, key_hash, depth FROM reservation_holds_kept;
INSERT INTO reservation_budgets (reservation_id, guardrail_id, subject)
    SELECT reservation_id, guardrail_id, subject FROM reservation_budgets_kept;
DROP TABLE reservation_holds_kept;
DROP TABLE reservation_budgets_kept;
CREATE INDEX reservations_key ON reservations (key_hash, expires_at);
CREATE INDEX reservations_expiry ON reservations (expires_at);
