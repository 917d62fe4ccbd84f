package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// jwksTTL is how long fetched keys are trusted before a refetch;
// jwksMinRefetch limits refetches caused by unknown kids (so a flood of
// tokens with random kids cannot hammer the identity provider).
const (
	jwksTTL        = 10 * time.Minute
	jwksMinRefetch = 30 * time.Second
)

// jwks caches the keys of a JSON Web Key Set by kid.
type jwks struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	keys    map[string]any
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
}

func newJWKS(url string, client *http.Client, now func() time.Time) *jwks {
	return &jwks{url: url, client: client, now: now}
}

// key returns the key with that kid, or nil if the set has none. It fetches
// when the cache is stale or the kid is unknown (at most every
// jwksMinRefetch).
func (j *jwks) key(kid string) (any, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	k, ok := j.keys[kid]
	stale := now.Sub(j.fetched) > jwksTTL
	if ok && !stale {
		return k, nil
	}
	if now.Sub(j.tried) < jwksMinRefetch && !j.tried.IsZero() {
		return k, nil // k may be nil: unknown kid, refetched recently
	}
	j.tried = now
	keys, err := j.fetch()
	if err != nil {
		if ok {
			return k, nil // keep serving the cached key while the provider is down
		}
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	j.keys, j.fetched = keys, now
	return keys[kid], nil
}

func (j *jwks) fetch() (map[string]any, error) {
	resp, err := j.client.Get(j.url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", j.url, resp.Status)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, err
	}
	keys := map[string]any{}
	for _, k := range set.Keys {
		if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if pk, err := k.publicKey(); err == nil {
			keys[k.Kid] = pk
		}
	}
	return keys, nil
}

// jwk is one key of a set (RFC 7517); only RSA and EC P-256 are read.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func (k jwk) publicKey() (any, error) {
	num := func(s string) (*big.Int, error) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			return nil, errors.New("bad base64url number")
		}
		return new(big.Int).SetBytes(b), nil
	}
	switch k.Kty {
	case "RSA":
		n, err := num(k.N)
		if err != nil {
			return nil, err
		}
		e, err := num(k.E)
		if err != nil || !e.IsInt64() {
			return nil, errors.New("bad RSA exponent")
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		if k.Crv != "P-256" {
			return nil, errors.New("unsupported curve")
		}
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("bad EC coordinates")
		}
		// ParseUncompressedPublicKey also checks the point is on the curve.
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	}
	return nil, fmt.Errorf("unsupported kty %q", k.Kty)
}
