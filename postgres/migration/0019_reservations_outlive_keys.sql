-- A reservation outlives its key. A call still running when its key is
-- deleted (a stream, say) is settled after the deletion, and its cost must
-- still reach the ledger, the keys its key was minted from, its budgets and
-- the organization's credits. The cascade from api_keys deleted the
-- reservation with the key, so the settle found nothing to end and charged
-- nothing. Without the foreign key the reservation stays until it is
-- settled, released or charged at its expiry; only the deleted key's own
-- counters, gone with it, are not charged.
ALTER TABLE reservations DROP CONSTRAINT reservations_key_hash_fkey;
