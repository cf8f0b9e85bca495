package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// Embed forwards an embeddings request to the provider's /embeddings and
// reads the whole answer: what metering needs is its usage.prompt_tokens
// (an embedding has no completion). The key goes as in Complete.
func (c *Client) Embed(ctx context.Context, call provider.EmbeddingCall) (provider.Completion, error) {
	out := make(map[string]json.RawMessage, len(call.Body)+1)
	for k, v := range call.Body {
		out[k] = v
	}
	out["model"], _ = json.Marshal(call.Model.ID)
	body, err := json.Marshal(out)
	if err != nil {
		return provider.Completion{}, err
	}
	x, err := c.exchange(ctx, call.Provider, call.Model, call.APIKey, "/embeddings", false, body)
	if err != nil {
		return provider.Completion{}, err
	}
	defer x.close()
	done, err := readEmbeddings(x.resp.Body, call.Rewrite)
	return done, x.answerError(err)
}

// readEmbeddings reads an embeddings answer: a JSON object with a data
// array. Usage is known when it has a whole, non-negative prompt_tokens.
// An answer larger than MaxResponseBytes is read to its end for its usage
// alone (see tooLarge).
func readEmbeddings(r io.Reader, rewrite func(map[string]json.RawMessage)) (provider.Completion, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxResponseBytes+1))
	if err != nil {
		return provider.Completion{}, fmt.Errorf("the answer could not be read: %w", err)
	}
	if len(raw) > MaxResponseBytes {
		return tooLarge(io.MultiReader(bytes.NewReader(raw), r), embeddingUsage)
	}
	obj, err := jsonobj.Unmarshal(raw)
	if err != nil {
		return provider.Completion{}, errors.New("the answer is not a JSON object")
	}
	// Each field by its exact name, apart: an odd id costs nothing, and an
	// unreadable usage is usage not known (charged the reservation), not an
	// answer thrown away after the provider's work.
	var data []json.RawMessage
	if err := json.Unmarshal(obj["data"], &data); err != nil || data == nil {
		return provider.Completion{}, errors.New("the answer has no data array of embeddings")
	}
	c := embeddingUsage(obj)
	_ = json.Unmarshal(obj["id"], &c.UpstreamID)
	if rewrite != nil {
		rewrite(obj)
	}
	c.Final = obj
	return c, nil
}

// embeddingUsage reads the usage of an embeddings answer: its
// prompt_tokens (an embedding has no completion).
func embeddingUsage(obj map[string]json.RawMessage) provider.Completion {
	var c provider.Completion
	if n, ok := usageCounts(obj["usage"], "prompt_tokens"); ok {
		c.PromptTokens, c.UsageKnown = n[0], true
	}
	return c
}
