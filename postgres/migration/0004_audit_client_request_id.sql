-- The request id of an audit entry is the server's own; an X-Request-Id
-- that the client sent is kept apart, since a client can send any value.
ALTER TABLE audit_log ADD COLUMN client_request_id TEXT;
