-- The web console pages through an audit log of millions of entries
-- newest first, by a cursor on (at, id), without counting or skipping any
-- (sqlstore/audit.go, SearchAuditEntries): each filter has an index that
-- yields its entries in that order, so that a page is one walk from the
-- cursor however rare the entries it keeps. The indexes of an actor and of
-- a resource type gain the id (a page's order ends with it), and an
-- operation gets one.
CREATE INDEX audit_log_operation ON audit_log (organization_id, operation, at, id);
DROP INDEX audit_log_actor_key;
CREATE INDEX audit_log_actor_key ON audit_log (organization_id, actor_key_hash, at, id);
DROP INDEX audit_log_actor_user;
CREATE INDEX audit_log_actor_user ON audit_log (organization_id, actor_user_id, at, id);
DROP INDEX audit_log_resource_type;
CREATE INDEX audit_log_resource_type ON audit_log (organization_id, resource_type, at, id);
