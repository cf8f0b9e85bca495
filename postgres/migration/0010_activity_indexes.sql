-- The activity and analytics reads (sqlstore/analytics.go) sum the ledger
-- of one organization over a time range, or of given keys.
--
-- generations_daily is keyed by the organization, the UTC day number
-- (created_at / 86400000, the expression the reads group by and bound
-- their range with) and the model, provider and workspace, and carries
-- the other columns of the activity and of the sums of calls, tokens and
-- costs: such a read of a range is an index-only scan. generations_key (a
-- key's calls by time) now carries the same columns, so that a key's
-- activity is an index-only scan too; it keeps its name and its key
-- columns, so whatever used it still can.
--
-- Both are built in this migration's transaction, which holds off writes
-- to the ledger while they build (see bench/README.md for how long on a
-- large ledger).
CREATE INDEX generations_daily ON generations (organization_id, (created_at / 86400000), model, provider, workspace_id)
    INCLUDE (byok, cost, prompt_tokens, completion_tokens, key_hash, created_at);
DROP INDEX generations_key;
CREATE INDEX generations_key ON generations (key_hash, created_at)
    INCLUDE (model, provider, workspace_id, byok, cost, prompt_tokens, completion_tokens, organization_id);
