package tickets_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/tickets"
)

// A code verifies with the published JWK alone (as an offline scanner
// would), carries tid and evt, and names its key by kid.
func TestCodeVerifiesOfflineWithThePublishedKey(t *testing.T) {
	k, err := tickets.ParseKeys("first-secret-0123456789")
	require.NoError(t, err)
	code, err := k.Sign(tickets.Claims{TicketID: "t1", EventID: "e1", Item: tickets.SeatItem("s1")})
	require.NoError(t, err)
	require.Len(t, strings.Split(code, "."), 3)

	var set struct{ Keys []tickets.JWK }
	require.NoError(t, json.Unmarshal(k.JWKS(), &set))
	require.Len(t, set.Keys, 1)
	jwk := set.Keys[0]
	require.Equal(t, "OKP", jwk.Kty)
	require.Equal(t, "Ed25519", jwk.Crv)
	x, err := base64.RawURLEncoding.DecodeString(jwk.X)
	require.NoError(t, err)

	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(code, claims, func(t *jwt.Token) (any, error) { return ed25519.PublicKey(x), nil },
		jwt.WithValidMethods([]string{"EdDSA"}))
	require.NoError(t, err)
	require.Equal(t, jwk.Kid, tok.Header["kid"])
	require.Equal(t, "t1", claims["tid"])
	require.Equal(t, "e1", claims["evt"])

	c, err := k.Verify(code)
	require.NoError(t, err)
	require.Equal(t, tickets.Claims{TicketID: "t1", EventID: "e1", Item: "seat:s1"}, c)
}

// Rotation: a new key signs, codes of the old one still verify while it is
// listed, and no longer once it is dropped; a tampered or foreign code
// never verifies.
func TestRotationAndForgery(t *testing.T) {
	old, err := tickets.ParseKeys("old-secret-0123456789")
	require.NoError(t, err)
	oldCode, err := old.Sign(tickets.Claims{TicketID: "t1", EventID: "e1"})
	require.NoError(t, err)

	rotated, err := tickets.ParseKeys("new-secret-0123456789, old-secret-0123456789")
	require.NoError(t, err)
	require.NotEqual(t, old.KID(), rotated.KID())
	_, err = rotated.Verify(oldCode)
	require.NoError(t, err)
	newCode, err := rotated.Sign(tickets.Claims{TicketID: "t2", EventID: "e1"})
	require.NoError(t, err)

	dropped, err := tickets.ParseKeys("new-secret-0123456789")
	require.NoError(t, err)
	_, err = dropped.Verify(oldCode)
	require.ErrorIs(t, err, tickets.ErrInvalidCode)
	_, err = dropped.Verify(newCode)
	require.NoError(t, err)

	// Tampered payload: another ticket id under the same signature.
	parts := strings.Split(newCode, ".")
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"tid":"t9","evt":"e1"}`)) + "." + parts[2]
	_, err = dropped.Verify(forged)
	require.ErrorIs(t, err, tickets.ErrInvalidCode)
	// An HMAC-signed token with alg confusion is refused.
	hs, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"tid": "t1", "evt": "e1"}).SignedString([]byte("x"))
	require.NoError(t, err)
	_, err = dropped.Verify(hs)
	require.ErrorIs(t, err, tickets.ErrInvalidCode)
	_, err = dropped.Verify("garbage")
	require.ErrorIs(t, err, tickets.ErrInvalidCode)
}
