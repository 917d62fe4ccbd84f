package search

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// cursor is the decoded form of an opaque `after` value: the sort order it
// belongs to and the sort key of the last hit (ending with the id), so a
// page continues strictly after it with no duplicates or gaps.
type cursor struct {
	Sort Sort  `json:"s"`
	Key  []any `json:"k"`
}

func encodeCursor(s Sort, key []any) string {
	b, _ := json.Marshal(cursor{Sort: s, Key: key})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor returns the key of after, which must belong to sort s and
// have n values.
func decodeCursor(after string, s Sort, n int) ([]any, error) {
	b, err := base64.RawURLEncoding.DecodeString(after)
	if err != nil {
		return nil, ErrBadCursor
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Sort != s || len(c.Key) != n {
		return nil, ErrBadCursor
	}
	return c.Key, nil
}

// keyStrings renders a cursor key as strings (Bleve's search_after).
func keyStrings(key []any) ([]string, error) {
	out := make([]string, len(key))
	for i, v := range key {
		switch v := v.(type) {
		case string:
			out[i] = v
		case float64:
			out[i] = fmt.Sprint(v)
		default:
			return nil, ErrBadCursor
		}
	}
	return out, nil
}
