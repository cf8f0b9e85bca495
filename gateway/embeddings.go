package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// Embed forwards an embeddings request to the provider's /embeddings and
// reads the whole answer: what metering needs is its usage.prompt_tokens
// (an embedding has no completion). The key goes as in Complete.
func (c *Client) Embed(ctx context.Context, call gatehouse.EmbeddingCall) (gatehouse.Completion, error) {
	p := call.Provider
	ctx, cancel := context.WithTimeout(ctx, Deadline(p))
	defer cancel()
	out := make(map[string]json.RawMessage, len(call.Body)+1)
	for k, v := range call.Body {
		out[k] = v
	}
	out["model"], _ = json.Marshal(call.Model.ID)
	body, err := json.Marshal(out)
	if err != nil {
		return gatehouse.Completion{}, err
	}
	resp, err := c.post(ctx, p, call.APIKey, "/embeddings", body)
	if err != nil {
		return gatehouse.Completion{}, err
	}
	defer resp.Body.Close()
	done, err := readEmbeddings(resp.Body, call.Rewrite)
	if err != nil {
		if ctx.Err() != nil {
			return done, networkError(ctx, p, err)
		}
		return done, &gatehouse.UpstreamError{Kind: gatehouse.UpstreamBadAnswer, Provider: p.ID, ProviderStatus: resp.StatusCode,
			Message: fmt.Sprintf("the provider %s sent an invalid answer: %v", p.ID, err)}
	}
	return done, nil
}

// readEmbeddings reads an embeddings answer: a JSON object with a data
// array. Usage is known when it has a whole, non-negative prompt_tokens.
func readEmbeddings(r io.Reader, rewrite func(map[string]json.RawMessage)) (gatehouse.Completion, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxResponseBytes+1))
	if err != nil || len(raw) > MaxResponseBytes {
		return gatehouse.Completion{}, errors.New("the answer could not be read")
	}
	obj, err := jsonobj.Unmarshal(raw)
	if err != nil {
		return gatehouse.Completion{}, errors.New("the answer is not a JSON object")
	}
	// Each field by its exact name, apart: an odd id costs nothing, and an
	// unreadable usage is usage not known (charged the reservation), not an
	// answer thrown away after the provider's work.
	var data []json.RawMessage
	if err := json.Unmarshal(obj["data"], &data); err != nil || data == nil {
		return gatehouse.Completion{}, errors.New("the answer has no data array of embeddings")
	}
	var c gatehouse.Completion
	_ = json.Unmarshal(obj["id"], &c.UpstreamID)
	if n, ok := usageCounts(obj["usage"], "prompt_tokens"); ok {
		c.PromptTokens, c.UsageKnown = n[0], true
	}
	if rewrite != nil {
		rewrite(obj)
	}
	c.Final = obj
	return c, nil
}
