-- The regular key that created an authorization code (NULL for a management
-- key): the exchange checks it is still active and caps the new key by it.
-- No foreign key: a deleted creator leaves the hash behind, and the exchange
-- refuses it.
ALTER TABLE auth_codes ADD COLUMN creator_key_hash TEXT;
