-- The prompt tokens of a generation read from and written to the
-- provider's prompt cache (counted in prompt_tokens too): they are priced
-- at the model's cache prices.
ALTER TABLE generations ADD COLUMN cache_read_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE generations ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
