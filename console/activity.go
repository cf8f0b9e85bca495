package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"gatehouse"
)

// activityPageSize is how many calls a page of the activity shows.
const activityPageSize = 50

// activityData is the data of the activity page: the ledger, call by
// call, newest first.
type activityData struct {
	Filter *form
	Calls  []callRow
	// Key is the key the list is filtered by, when it is.
	Key *gatehouse.Key
	// Next is the link to the next page, "" on the last; First the link
	// to the first page when this is not it.
	Next, First string
}

// callRow is a call of the ledger as the page shows it.
type callRow struct {
	*gatehouse.Generation
	KeyName string
	Tokens  int64
}

// activity lists the calls of the ledger newest first, filtered by key,
// model and UTC days, a page at a time. A member sees the calls of their
// own keys only (the search is scoped to them, whatever the filters).
func (s *Server) activity(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ctx := r.Context()
	q := r.URL.Query()
	f := emptyForm()
	for _, k := range []string{"key", "model", "since", "until"} {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			f.Values.Set(k, v)
		}
	}
	data := activityData{Filter: f}
	search, key, err := s.activitySearch(ctx, sess, f)
	if err == nil && q.Get("after") != "" {
		search.After, err = gatehouse.ParseGenerationCursor(q.Get("after"))
	}
	var page *gatehouse.GenerationPage
	if err == nil {
		page, err = s.store.SearchGenerations(ctx, sess.OrganizationID, search)
	}
	if err != nil {
		if err := f.withError(err, "key", "model", "since", "until"); err != nil {
			return err
		}
		return s.render(w, r, sess, http.StatusBadRequest, "activity", "Activity", data)
	}
	data.Key = key
	if data.Calls, err = s.callRows(ctx, sess, page.Generations); err != nil {
		return err
	}
	if page.Next != nil {
		v := cloneValues(f.Values)
		v.Set("after", page.Next.String())
		data.Next = "/activity?" + v.Encode()
	}
	if search.After != nil {
		data.First = "/activity"
		if len(f.Values) > 0 {
			data.First += "?" + f.Values.Encode()
		}
	}
	return s.render(w, r, sess, http.StatusOK, "activity", "Activity", data)
}

// activitySearch reads the filter form into a search of the session's
// scope. The key filter names one key the session may see (its name, a
// hash or a prefix of one, or its plaintext).
func (s *Server) activitySearch(ctx context.Context, sess *gatehouse.Session, f *form) (gatehouse.GenerationSearch, *gatehouse.Key, error) {
	search := gatehouse.GenerationSearch{CreatorUserID: sess.KeyScope(), Model: f.get("model"), Limit: activityPageSize}
	var key *gatehouse.Key
	if ref := f.get("key"); ref != "" {
		matches, err := s.keysNamed(ctx, sess, ref)
		if err != nil {
			return search, nil, err
		}
		switch len(matches) {
		case 0:
			return search, nil, gatehouse.FieldError("key", "no key of yours is named or hashed so")
		case 1:
			key, search.KeyHash = matches[0], matches[0].Hash
		default:
			return search, nil, gatehouse.FieldError("key", "more than one key is named or hashed so: give more of the hash")
		}
	}
	var err error
	if search.Since, err = dayStart(f, "since"); err != nil {
		return search, nil, err
	}
	if search.Until, err = f.date("until"); err != nil {
		return search, nil, err
	}
	return search, key, nil
}

// callRows names the keys of calls (keys the session cannot see, or
// deleted ones, keep the start of their hash).
func (s *Server) callRows(ctx context.Context, sess *gatehouse.Session, gens []*gatehouse.Generation) ([]callRow, error) {
	names := map[string]string{}
	out := make([]callRow, len(gens))
	for i, g := range gens {
		if _, ok := names[g.KeyHash]; !ok {
			names[g.KeyHash] = "key " + g.KeyHash[:min(len(g.KeyHash), 12)]
			k, err := s.store.FindKey(ctx, sess.OrganizationID, g.KeyHash)
			switch {
			case err == nil && sess.MayManageKey(k):
				names[g.KeyHash] = k.Name
			case err != nil && gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND:
				return nil, err
			}
		}
		out[i] = callRow{Generation: g, KeyName: names[g.KeyHash], Tokens: g.PromptTokens + g.CompletionTokens}
	}
	return out, nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
