-- The attempts of a routed call (OpenRouter's provider_responses): a JSON
-- array of {provider, model, status, latency_ms, id, is_byok}, in order.
-- NULL for the generations recorded before routing kept them.
ALTER TABLE generations ADD COLUMN provider_responses TEXT;
