package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ticketing/ticketing/apperr"
)

// BearerToken returns the token of an Authorization value "Bearer <token>"
// (scheme case-insensitive). ok is false when the value is not of that form.
func BearerToken(header string) (token string, ok bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Authenticate verifies an Authorization header value. An empty value is an
// anonymous caller (ok false, no error); anything else must be a valid bearer
// token, else the error wraps apperr.ErrUnauthenticated.
func (v *Verifier) Authenticate(header string) (u User, ok bool, err error) {
	u, _, ok, err = v.AuthenticateUntil(header)
	return u, ok, err
}

// AuthenticateUntil is Authenticate that also returns when the token
// expires.
func (v *Verifier) AuthenticateUntil(header string) (u User, exp time.Time, ok bool, err error) {
	if strings.TrimSpace(header) == "" {
		return User{}, time.Time{}, false, nil
	}
	token, isBearer := BearerToken(header)
	if !isBearer {
		return User{}, time.Time{}, false, errors.Join(apperr.ErrUnauthenticated, errors.New("the Authorization header must be \"Bearer <JWT>\""))
	}
	u, exp, err = v.VerifyUntil(token)
	if err != nil {
		return User{}, time.Time{}, false, err
	}
	return u, exp, true, nil
}

// ErrTokenExpired ends what a token authenticated when the token expires.
var ErrTokenExpired = errors.Join(apperr.ErrUnauthenticated, errors.New("token expired"))

// Middleware puts the caller of a valid bearer token in the request context.
// Without an Authorization header the request goes on anonymously (catalog
// reads need no token). A present but invalid token is refused at once with
// 401 and code UNAUTHENTICATED, rather than silently downgraded to anonymous:
//
//   - on /graphql the body is a GraphQL response,
//     {"errors":[{"message":"...","extensions":{"code":"UNAUTHENTICATED"}}],"data":null},
//     which GraphQL clients read whatever the status;
//   - elsewhere it is the REST error shape {"error":{"code":"UNAUTHENTICATED","message":"..."}}.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, exp, ok, err := v.AuthenticateUntil(r.Header.Get("Authorization"))
		if err != nil {
			WriteUnauthenticated(w, r, "invalid token: "+reason(err))
			return
		}
		if ok {
			// A request that outlives the token (an SSE subscription) ends
			// with it.
			ctx, cancel := context.WithDeadlineCause(WithUserUntil(r.Context(), u, exp), exp, ErrTokenExpired)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// reason is the part of err after the sentinel's text, for the client.
func reason(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, apperr.ErrUnauthenticated.Error())
	s = strings.TrimLeft(s, ":\n ")
	if s == "" {
		return apperr.ErrUnauthenticated.Error()
	}
	return s
}

// WriteUnauthenticated answers 401 UNAUTHENTICATED, with the bearer
// challenge, in the shape the path's clients expect (apperr.WriteHTTPCode).
func WriteUnauthenticated(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	apperr.WriteHTTPCode(w, r, http.StatusUnauthorized, "UNAUTHENTICATED", msg, nil)
}
