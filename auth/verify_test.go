package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
)

const secret = "0123456789abcdef-secret"

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func validClaims() jwt.MapClaims {
	return jwt.MapClaims{"iss": "iss", "aud": "aud", "sub": "u1", "exp": time.Now().Add(time.Hour).Unix()}
}

func signKid(t *testing.T, m jwt.SigningMethod, kid string, key any) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, validClaims())
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func TestMint(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(Config{Issuer: "iss", Audience: "aud", HS256Secret: secret})
	require.NoError(t, err)
	tok, err := Mint(secret, "iss", "aud", "u1", []string{"admin"}, time.Minute)
	require.NoError(t, err)
	u, err := v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, User{ID: "u1", Roles: []string{"admin"}}, u)
	require.True(t, u.IsAdmin())

	_, err = Mint("", "iss", "aud", "u1", nil, time.Minute)
	require.Error(t, err)
	tok, err = Mint(secret, "iss", "aud", "u1", nil, -time.Minute)
	require.NoError(t, err)
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
}

func TestVerifierWithoutKeysRefusesTokens(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(Config{Issuer: "iss", Audience: "aud"})
	require.NoError(t, err)
	tok, _ := Mint(secret, "iss", "aud", "u1", nil, time.Minute)
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
}

func TestPublicKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a pem"), 0o600))
	_, err := NewVerifier(Config{Issuer: "iss", Audience: "aud", PublicKeyFile: bad})
	require.ErrorContains(t, err, "JWT_PUBLIC_KEY_FILE")
	_, err = NewVerifier(Config{Issuer: "iss", Audience: "aud", PublicKeyFile: filepath.Join(dir, "missing.pem")})
	require.ErrorContains(t, err, "JWT_PUBLIC_KEY_FILE")
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecBytes, err := ek.PublicKey.Bytes() // 0x04 || X || Y
	require.NoError(t, err)

	var fetches atomic.Int32
	var withEC atomic.Bool
	jwksSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		keys := []map[string]string{{
			"kty": "RSA", "kid": "r1", "use": "sig",
			"n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes()),
		}}
		if withEC.Load() {
			keys = append(keys, map[string]string{
				"kty": "EC", "kid": "e1", "crv": "P-256",
				"x": b64(ecBytes[1:33]), "y": b64(ecBytes[33:]),
			})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(jwksSrv.Close)

	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	v, err := NewVerifier(Config{Issuer: "iss", Audience: "aud", JWKSURL: jwksSrv.URL,
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	require.NoError(t, err)

	_, err = v.Verify(signKid(t, jwt.SigningMethodRS256, "r1", rk))
	require.NoError(t, err)
	_, err = v.Verify(signKid(t, jwt.SigningMethodRS256, "r1", rk))
	require.NoError(t, err)
	require.EqualValues(t, 1, fetches.Load(), "keys are cached")

	// A key type that does not fit the algorithm is refused.
	_, err = v.Verify(signKid(t, jwt.SigningMethodES256, "r1", ek))
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)

	// An unknown kid refetches, but not more than every jwksMinRefetch.
	withEC.Store(true)
	_, err = v.Verify(signKid(t, jwt.SigningMethodES256, "e1", ek))
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
	require.EqualValues(t, 1, fetches.Load())
	clock.Add(int64(jwksMinRefetch + time.Second))
	_, err = v.Verify(signKid(t, jwt.SigningMethodES256, "e1", ek))
	require.NoError(t, err)
	require.EqualValues(t, 2, fetches.Load())

	// HS256 is off without a secret, so RS/HS confusion cannot even start.
	_, err = v.Verify(signKid(t, jwt.SigningMethodHS256, "r1", rk.N.Bytes()))
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
}

func TestAuthenticateHeader(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(Config{Issuer: "iss", Audience: "aud", HS256Secret: secret})
	require.NoError(t, err)
	tok, _ := Mint(secret, "iss", "aud", "u1", nil, time.Minute)

	_, ok, err := v.Authenticate("")
	require.NoError(t, err)
	require.False(t, ok)
	u, ok, err := v.Authenticate("bearer " + tok)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "u1", u.ID)
	for _, h := range []string{"Bearer", "Bearer ", "Token " + tok, tok} {
		_, _, err = v.Authenticate(h)
		require.True(t, errors.Is(err, apperr.ErrUnauthenticated), h)
	}
}

// A cached verification never outlives the token (exp, without leeway); a
// tampered token is another cache key.
func TestVerifiedCacheHonoursExpiry(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	v, err := NewVerifier(Config{Issuer: "iss", Audience: "aud", HS256Secret: secret,
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	require.NoError(t, err)
	tok, _ := Mint(secret, "iss", "aud", "u1", []string{"admin"}, time.Minute)
	for range 2 {
		u, err := v.Verify(tok)
		require.NoError(t, err)
		require.Equal(t, User{ID: "u1", Roles: []string{"admin"}}, u)
	}
	_, err = v.Verify(tok[:len(tok)-2] + "xx")
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
	clock.Add(int64(time.Minute - time.Second))
	_, err = v.Verify(tok)
	require.NoError(t, err)
	clock.Add(int64(time.Second))
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
}
