-- The activity and analytics reads (sqlstore/analytics.go) sum the ledger
-- of one organization over a time range, or of given keys.
--
-- generations_daily holds, in order, the organization, the UTC day number
-- (created_at / 86400000, the expression the reads group by) and the
-- model, provider and workspace, then the other columns of the activity
-- and of the sums of calls, tokens and costs: such a read of a range is one
-- walk along the index (never the table), and SQLite sums each day's models
-- as it walks, instead of sorting every row first. generations_key (a
-- key's calls by time) now carries the same columns, so that a key's
-- activity never reads the table either; it keeps its name and its first
-- columns, so whatever used it still can.
CREATE INDEX generations_daily ON generations (organization_id, (created_at / 86400000), model, provider,
    workspace_id, byok, cost, prompt_tokens, completion_tokens, key_hash, created_at);
DROP INDEX generations_key;
CREATE INDEX generations_key ON generations (key_hash, created_at, model, provider, workspace_id, byok, cost,
    prompt_tokens, completion_tokens, organization_id);
