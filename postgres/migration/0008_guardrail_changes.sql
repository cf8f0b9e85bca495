-- Guardrail updates and deletions (a workspace's deletion cascades to its
-- guardrails) are announced on channel gatehouse_guardrails, the payload
-- being the guardrail's id, so that the guardrail cache of every instance
-- forgets it as the change commits (postgres/notify.go). Guardrails change
-- only through management writes, so a notification per row is cheap;
-- their budget usage lives in guardrail_usage and is not announced. An
-- insertion needs no notice: the caches hold no "not found".
CREATE FUNCTION gatehouse_announce_guardrail_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gatehouse_guardrails', OLD.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER guardrails_announce_change
    AFTER UPDATE OR DELETE ON guardrails FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_guardrail_change();
