package apperr

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
)

// WriteHTTP writes err as an HTTP error response: its status, code, message
// and extensions are Describe's. It does not log: a caller that can meet
// unknown errors logs their cause itself.
func WriteHTTP(w http.ResponseWriter, r *http.Request, err error) {
	d, _ := Describe(err)
	WriteHTTPCode(w, r, d.HTTPStatus, d.Code, d.Message, d.Extensions)
}

// WriteHTTPCode writes every error body the server answers with, in the
// shape the request's clients read: on /graphql a GraphQL response
// ({"errors": [{"message", "extensions": {"code", ...ext}}], "data": null}),
// elsewhere the contract's REST error body
// ({"error": {"code", "message", ...ext}}). Error responses are never
// cached, and one that carries retryAfterSeconds (RATE_LIMITED) also says it
// in Retry-After. Headers set before the call (WWW-Authenticate,
// Connection) are kept.
func WriteHTTPCode(w http.ResponseWriter, r *http.Request, status int, code, msg string, ext map[string]any) {
	h := w.Header()
	if s, ok := ext["retryAfterSeconds"].(int); ok {
		h.Set("Retry-After", strconv.Itoa(s))
	}
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var body any
	if r.URL.Path == "/graphql" {
		e := map[string]any{"code": code}
		maps.Copy(e, ext)
		body = map[string]any{"errors": []any{map[string]any{"message": msg, "extensions": e}}, "data": nil}
	} else {
		e := map[string]any{"code": code, "message": msg}
		maps.Copy(e, ext)
		body = map[string]any{"error": e}
	}
	_ = json.NewEncoder(w).Encode(body)
}
