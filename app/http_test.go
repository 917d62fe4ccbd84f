package app_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/testdb"
)

const (
	testSecret   = "test-secret-0123456789abcdef"
	testIssuer   = "ticketing-test"
	testAudience = "ticketing"
	publicURL    = "https://tickets.example"
)

// keys are generated once per test binary (RSA generation is slow).
var keys = sync.OnceValue(func() (k struct {
	rsa, otherRSA *rsa.PrivateKey
	ec            *ecdsa.PrivateKey
	pubPEM        []byte // RSA and EC public keys
}) {
	k.rsa, _ = rsa.GenerateKey(rand.Reader, 2048)
	k.otherRSA, _ = rsa.GenerateKey(rand.Reader, 2048)
	k.ec, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, pub := range []any{&k.rsa.PublicKey, &k.ec.PublicKey} {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			panic(err)
		}
		k.pubPEM = append(k.pubPEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	}
	return k
})

type testBundle struct {
	app *app.App
	srv *httptest.Server
}

// setup builds the real App (own database, HS256 secret and a PEM file with
// RSA and EC keys) behind httptest.NewServer.
func setup(t testing.TB) *testBundle {
	t.Helper()
	return setupEnv(t, nil)
}

// setupEnv is setup with some variables replaced ("" unsets one).
func setupEnv(t testing.TB, extra map[string]string) *testBundle {
	t.Helper()
	pemFile := filepath.Join(t.TempDir(), "jwt.pem")
	require.NoError(t, os.WriteFile(pemFile, keys().pubPEM, 0o600))
	env := map[string]string{
		"DATABASE_URL":        testdb.NewDatabase(t),
		"REDIS_URL":           testdb.RedisURL(),
		"JWT_ISSUER":          testIssuer,
		"JWT_AUDIENCE":        testAudience,
		"JWT_HS256_SECRET":    testSecret,
		"JWT_PUBLIC_KEY_FILE": pemFile,
		"PUBLIC_BASE_URL":     publicURL,
		"ALLOWED_ORIGINS":     "https://partner.example",
		// Off by default where development sign-in is off (this URL).
		"GRAPHQL_INTROSPECTION": "on",
		// The seat map's and the rate limits' keys of this test only.
		"SEATMAP_REDIS_PREFIX": testdb.RedisPrefix(t),
		"SEARCH_DIR":           t.TempDir(),
	}
	maps.Copy(env, extra)
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(context.Background(), cfg, log)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &testBundle{app: a, srv: srv}
}

// gqlResponse is a GraphQL response as clients see it.
type gqlResponse struct {
	Status int
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (b *testBundle) graphql(t *testing.T, authz, query string) gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, err := http.NewRequest("POST", b.srv.URL+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out gqlResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	out.Status = resp.StatusCode
	return out
}

func claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss":   testIssuer,
		"aud":   []string{"other", testAudience},
		"sub":   "user-1",
		"exp":   now.Add(time.Hour).Unix(),
		"iat":   now.Unix(),
		"roles": []string{"admin"},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	require.NoError(t, err)
	return s
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := keys()
	hs := []byte(testSecret)
	ago := func(d time.Duration) int64 { return time.Now().Add(-d).Unix() }
	in := func(d time.Duration) int64 { return time.Now().Add(d).Unix() }

	bad := map[string]string{
		"Expired":        sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["exp"] = ago(time.Minute) })),
		"JustExpired":    sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["exp"] = ago(5 * time.Second) })),
		"WrongIssuer":    sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["iss"] = "someone-else" })),
		"WrongAudience":  sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["aud"] = "other" })),
		"NoExpiry":       sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { delete(c, "exp") })),
		"NoSubject":      sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { delete(c, "sub") })),
		"EmptySubject":   sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["sub"] = "" })),
		"NotYetValid":    sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["nbf"] = in(2 * time.Minute) })),
		"IssuedInFuture": sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["iat"] = in(2 * time.Minute) })),
		"RolesNotArray":  sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["roles"] = "admin" })),
		"AlgNone":        sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)),
		"UnexpectedAlg":  sign(t, jwt.SigningMethodHS512, hs, claims(nil)),
		"WrongHMACKey":   sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789"), claims(nil)),
		"WrongRSAKey":    sign(t, jwt.SigningMethodRS256, k.otherRSA, claims(nil)),
		"PS256":          sign(t, jwt.SigningMethodPS256, k.rsa, claims(nil)),
		// RS/HS confusion: HS256 "signed" with the server's public key bytes.
		"RSHSConfusion": sign(t, jwt.SigningMethodHS256, k.pubPEM, claims(nil)),
		"Garbage":       "not.a.jwt",
	}
	for name, tok := range bad {
		t.Run("Err"+name, func(t *testing.T) {
			t.Parallel()
			r := b.graphql(t, "Bearer "+tok, `{ me { id } }`)
			require.Equal(t, http.StatusUnauthorized, r.Status)
			require.Len(t, r.Errors, 1)
			require.Equal(t, "UNAUTHENTICATED", r.Errors[0].Extensions["code"])
		})
	}
	t.Run("ErrNotBearer", func(t *testing.T) {
		t.Parallel()
		r := b.graphql(t, "Basic dXNlcjpwYXNz", `{ me { id } }`)
		require.Equal(t, http.StatusUnauthorized, r.Status)
		require.Equal(t, "UNAUTHENTICATED", r.Errors[0].Extensions["code"])
	})

	good := map[string]string{
		"HS256":        sign(t, jwt.SigningMethodHS256, hs, claims(nil)),
		"RS256":        sign(t, jwt.SigningMethodRS256, k.rsa, claims(nil)),
		"ES256":        sign(t, jwt.SigningMethodES256, k.ec, claims(nil)),
		"SkewWithin30": sign(t, jwt.SigningMethodRS256, k.rsa, claims(func(c jwt.MapClaims) { c["nbf"] = in(10 * time.Second); c["iat"] = in(10 * time.Second) })),
		"AudAsString":  sign(t, jwt.SigningMethodHS256, hs, claims(func(c jwt.MapClaims) { c["aud"] = testAudience })),
	}
	for name, tok := range good {
		t.Run("OK"+name, func(t *testing.T) {
			t.Parallel()
			r := b.graphql(t, "Bearer "+tok, `{ me { id roles } }`)
			require.Equal(t, http.StatusOK, r.Status)
			require.Empty(t, r.Errors)
			require.JSONEq(t, `{"me":{"id":"user-1","roles":["admin"]}}`, string(r.Data))
		})
	}
	t.Run("OKAnonymous", func(t *testing.T) {
		t.Parallel()
		r := b.graphql(t, "", `{ me { id } }`)
		require.Equal(t, http.StatusOK, r.Status)
		require.Empty(t, r.Errors)
		require.JSONEq(t, `{"me":null}`, string(r.Data))
	})
	t.Run("RESTShape", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest("GET", b.srv.URL+"/api/events", nil)
		req.Header.Set("Authorization", "Bearer "+bad["Expired"])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		var body struct{ Error struct{ Code string } }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, "UNAUTHENTICATED", body.Error.Code)
	})
}

// wsDial opens a WebSocket to /graphql with a subprotocol and Origin.
func (b *testBundle) wsDial(t *testing.T, subprotocol, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{subprotocol}, HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(b.srv.URL, "http")+"/graphql", h)
	if c != nil {
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	return c, resp, err
}

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func TestWebsocket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(nil))
	badTok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["iss"] = "x" }))
	initMsg := func(tok string) wsMsg {
		p, _ := json.Marshal(map[string]string{"Authorization": "Bearer " + tok})
		return wsMsg{Type: "connection_init", Payload: p}
	}

	t.Run("OKTransportWS", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.wsDial(t, "graphql-transport-ws", publicURL)
		require.NoError(t, err)
		require.Equal(t, "graphql-transport-ws", c.Subprotocol())
		require.NoError(t, c.WriteJSON(initMsg(good)))
		var m wsMsg
		require.NoError(t, c.ReadJSON(&m))
		require.Equal(t, "connection_ack", m.Type)
		// The caller from connection_init reaches resolvers.
		require.NoError(t, c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: json.RawMessage(`{"query":"{ me { id } }"}`)}))
		for m.Type != "next" {
			require.NoError(t, c.ReadJSON(&m))
		}
		require.JSONEq(t, `{"data":{"me":{"id":"user-1"}}}`, string(m.Payload))
	})
	t.Run("ErrTokenExpiresOnOpenConnection", func(t *testing.T) {
		t.Parallel()
		exp := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
		short := sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
		c, _, err := b.wsDial(t, "graphql-transport-ws", publicURL)
		require.NoError(t, err)
		require.NoError(t, c.WriteJSON(initMsg(short)))
		var m wsMsg
		require.NoError(t, c.ReadJSON(&m))
		require.Equal(t, "connection_ack", m.Type)
		// The connection is closed at the token's expiry; before it, the
		// caller is served.
		require.NoError(t, c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: json.RawMessage(`{"query":"{ me { id } }"}`)}))
		require.NoError(t, c.SetReadDeadline(time.Now().Add(15*time.Second)))
		for {
			if err = c.ReadJSON(&m); err != nil {
				break
			}
		}
		require.False(t, time.Now().Before(exp), "closed before the token expired")
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce, "the server closed it (not the read deadline)")
	})
	t.Run("ErrBadTokenTransportWS", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.wsDial(t, "graphql-transport-ws", "")
		require.NoError(t, err)
		require.NoError(t, c.WriteJSON(initMsg(badTok)))
		var m wsMsg
		err = c.ReadJSON(&m)
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce, "got message %+v", m)
		require.Equal(t, 4403, ce.Code)
	})
	t.Run("ErrBadTokenLegacyGraphqlWS", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.wsDial(t, "graphql-ws", "")
		require.NoError(t, err)
		require.Equal(t, "graphql-ws", c.Subprotocol())
		require.NoError(t, c.WriteJSON(initMsg(badTok)))
		var m wsMsg
		require.NoError(t, c.ReadJSON(&m))
		require.Equal(t, "connection_error", m.Type)
		require.Contains(t, string(m.Payload), "UNAUTHENTICATED")
	})
	t.Run("OKLegacyGraphqlWSAnonymous", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.wsDial(t, "graphql-ws", "")
		require.NoError(t, err)
		require.NoError(t, c.WriteJSON(wsMsg{Type: "connection_init"}))
		var m wsMsg
		require.NoError(t, c.ReadJSON(&m))
		require.Equal(t, "connection_ack", m.Type)
	})
	t.Run("OKSameHostOrigin", func(t *testing.T) {
		t.Parallel()
		_, _, err := b.wsDial(t, "graphql-transport-ws", b.srv.URL)
		require.NoError(t, err)
	})
	t.Run("OKAllowedOrigin", func(t *testing.T) {
		t.Parallel()
		_, _, err := b.wsDial(t, "graphql-transport-ws", "https://partner.example")
		require.NoError(t, err)
	})
	t.Run("ErrDisallowedOrigin", func(t *testing.T) {
		t.Parallel()
		_, resp, err := b.wsDial(t, "graphql-transport-ws", "https://evil.example")
		require.Error(t, err)
		require.NotNil(t, resp)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
	t.Run("ErrDisallowedOriginSSE", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", strings.NewReader(`{"query":"{ me { id } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
	t.Run("OKSSE", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", strings.NewReader(`{"query":"{ me { id } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+good)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
		require.Contains(t, string(body), `"me":{"id":"user-1"}`)
	})
}

// nested returns a query whose selections nest at least depth levels.
func nested(depth int) string {
	var open strings.Builder
	levels := 1
	open.WriteString(`{ artist(id: "x") { `)
	closes := 1
	for levels < depth {
		open.WriteString(`events { edges { node { artists { `)
		closes += 4
		levels += 4
	}
	open.WriteString("id ")
	return open.String() + strings.Repeat("} ", closes) + "}"
}

func TestLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("ErrDepth50", func(t *testing.T) {
		t.Parallel()
		r := b.graphql(t, "", nested(50))
		require.Equal(t, http.StatusUnprocessableEntity, r.Status)
		require.Len(t, r.Errors, 1)
		require.Equal(t, "GRAPHQL_VALIDATION_FAILED", r.Errors[0].Extensions["code"])
		require.Contains(t, r.Errors[0].Message, "depth")
		require.Contains(t, []string{"", "null"}, string(r.Data), "refused before execution")
	})
	t.Run("ErrComplexityGrowsWithWhatAListReturns", func(t *testing.T) {
		t.Parallel()
		// One page of 100 events with their venues' seats is refused; the
		// same with one event is not (gqlgen's default counted both as 7).
		q := `{ searchEvents(first: %d) { edges { node { venue { sections { seats { id } } } } } } }`
		r := b.graphql(t, "", fmt.Sprintf(q, 100))
		require.Len(t, r.Errors, 1)
		require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", r.Errors[0].Extensions["code"])
		r = b.graphql(t, "", fmt.Sprintf(q, 1))
		for _, e := range r.Errors {
			require.NotEqual(t, "COMPLEXITY_LIMIT_EXCEEDED", e.Extensions["code"])
		}
	})
	t.Run("ErrComplexityPricesAnEventsSeatMapByItsVenue", func(t *testing.T) {
		t.Parallel()
		// An event's seat map costs its venue's seats (the sizes come from
		// the catalog): four copies of a 60,000-unit floor's map are
		// refused, four of a 100-unit room's are not, and an unknown event
		// costs nothing, and is not remembered as such once it exists.
		admin := auth.WithUser(t.Context(), auth.User{ID: "admin-1", Roles: []string{"admin"}})
		event := func(capacity int, id string) string {
			v, err := b.app.Catalog.CreateVenue(admin, catalog.VenueInput{Name: fmt.Sprintf("Sala %d", capacity),
				Address: "Calle 1", City: "Madrid", Country: "ES", Lat: 40.4, Lon: -3.7,
				Sections: []catalog.SectionInput{{Name: "Pista", Kind: catalog.KindGeneralAdmission, Capacity: capacity}}})
			require.NoError(t, err)
			secs, err := b.app.Catalog.SectionsByVenueIDs(t.Context(), []string{v.ID})
			require.NoError(t, err)
			starts := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Minute)
			e, err := b.app.Catalog.CreateEvent(admin, catalog.EventInput{ID: id, Name: fmt.Sprintf("Noche %d", capacity),
				Category: "concierto", StartsAt: starts, VenueID: v.ID, SaleStartsAt: time.Now().Add(-time.Hour),
				Prices:            []catalog.PriceInput{{SectionID: secs[v.ID][0].ID, Amount: 1000, Currency: "EUR"}},
				MaxTicketsPerUser: 4, HoldDurationSeconds: 300})
			require.NoError(t, err)
			return e.ID
		}
		maps := func(id string) string {
			var q strings.Builder
			q.WriteString("{ ")
			for i := range 4 {
				fmt.Fprintf(&q, `m%d: event(id: "%s") { seatMap { seats { seatId status } } } `, i, id)
			}
			return q.String() + "}"
		}
		big := uuid.Must(uuid.NewV7()).String()
		r := b.graphql(t, "", maps(big))
		require.Empty(t, r.Errors, "an unknown event")
		event(60_000, big)
		r = b.graphql(t, "", maps(big))
		require.Len(t, r.Errors, 1)
		require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", r.Errors[0].Extensions["code"])
		r = b.graphql(t, "", maps(event(100, "")))
		require.Empty(t, r.Errors)
	})
	t.Run("ErrComplexity", func(t *testing.T) {
		t.Parallel()
		var q strings.Builder
		q.WriteString("{ ")
		// each alias: 1 + 100 * (edges 1 + node 1 + id 1) = 301
		for i := range app.MaxQueryComplexity/301 + 1 {
			fmt.Fprintf(&q, `e%d: searchEvents(first: 100) { edges { node { id } } } `, i)
		}
		q.WriteString("}")
		r := b.graphql(t, "", q.String())
		require.Equal(t, http.StatusOK, r.Status) // as gqlgen answers it: not a protocol error
		require.Len(t, r.Errors, 1)
		require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", r.Errors[0].Extensions["code"])
		require.Equal(t, fmt.Sprintf("operation has complexity %d, which exceeds the limit of %d",
			301*(app.MaxQueryComplexity/301+1), app.MaxQueryComplexity), r.Errors[0].Message)
		require.Contains(t, []string{"", "null"}, string(r.Data), "refused before execution")
	})
	t.Run("OKIntrospection", func(t *testing.T) {
		t.Parallel()
		r := b.graphql(t, "", `{ __schema { queryType { name } types { name fields { name args { name type { ...T } } type { ...T } } } } }
			fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`)
		require.Equal(t, http.StatusOK, r.Status)
		require.Empty(t, r.Errors)
	})
	t.Run("ErrBodyTooLarge", func(t *testing.T) {
		t.Parallel()
		big := `{"query":"{ me { id } }","variables":{"pad":"` + strings.Repeat("x", app.MaxBodyBytes) + `"}}`
		resp, err := http.Post(b.srv.URL+"/graphql", "application/json", strings.NewReader(big))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	})
	t.Run("ErrBodyTooLargeChunked", func(t *testing.T) {
		t.Parallel()
		big := `{"query":"{ me { id } }","variables":{"pad":"` + strings.Repeat("x", app.MaxBodyBytes) + `"}}`
		// io.MultiReader hides the length, so the body goes chunked.
		resp, err := http.Post(b.srv.URL+"/graphql", "application/json", io.MultiReader(strings.NewReader(big)))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	})
	t.Run("ErrBodyTooLargeWithUpgradeHeader", func(t *testing.T) {
		t.Parallel()
		// Only a real WebSocket handshake skips the body limit.
		big := `{"query":"{ me { id } }","variables":{"pad":"` + strings.Repeat("x", app.MaxBodyBytes) + `"}}`
		req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", strings.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Upgrade", "foo")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	})
	t.Run("OKRequestID", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest("GET", b.srv.URL+"/healthz", nil)
		req.Header.Set("X-Request-Id", "abc-123")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "abc-123", resp.Header.Get("X-Request-Id"))
		resp, err = http.Get(b.srv.URL + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
	})
}

func TestOpsEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	get := func(t *testing.T, path string) (int, string) {
		t.Helper()
		resp, err := http.Get(b.srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}

	code, _ := get(t, "/healthz")
	require.Equal(t, http.StatusOK, code)

	code, body := get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	var ready app.Readiness
	require.NoError(t, json.Unmarshal([]byte(body), &ready))
	require.Equal(t, "ready", ready.Status)
	require.Equal(t, "up", ready.Dependencies["postgres"].Status)
	require.True(t, ready.Dependencies["postgres"].Critical)
	for _, dep := range []string{"redis", "search", "payments"} {
		require.Contains(t, ready.Dependencies, dep)
	}

	code, body = get(t, "/playground")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `src="/playground/assets/`, "GraphiQL is embedded, not fetched from a CDN")
	require.NotContains(t, body, "https://")

	code, body = get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `ticketing_http_request_duration_seconds_count{code="200",method="GET",route="GET /healthz"}`)
	require.Contains(t, body, "go_goroutines")
	b.graphql(t, "", `{ me { id } }`)
	_, body = get(t, "/metrics")
	require.Contains(t, body, `ticketing_http_request_duration_seconds_count{code="200",method="POST",route="/graphql"}`)

	// Postgres unreachable: a check on a closed pool makes /readyz 503.
	closed, err := pgxpool.New(context.Background(), testdb.NewDatabase(t))
	require.NoError(t, err)
	closed.Close()
	b.app.AddReadinessCheck("postgres", app.PostgresCheck(closed), true)
	code, body = get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &ready))
	require.Equal(t, "unavailable", ready.Status)
	require.Equal(t, "down", ready.Dependencies["postgres"].Status)
	require.NotEmpty(t, ready.Dependencies["postgres"].Error)
}
