-- What acted when neither a key nor a member did: the server's first start
-- (first_start), an application exchanging an authorization code
-- (key_exchange), someone not signed in trying to sign in to the console
-- (visitor). NULL with no key and no member is the command line. The code
-- exchanges recorded before this column were all made by applications.
ALTER TABLE audit_log ADD COLUMN actor_system TEXT;
UPDATE audit_log SET actor_system = 'key_exchange'
    WHERE operation = 'auth_code.exchange' AND actor_key_hash IS NULL AND actor_user_id IS NULL;
