// Package tickets signs and verifies ticket entry codes. A code is a compact
// JWS (RFC 7515) signed with EdDSA (Ed25519): its header's kid names the
// key, its payload carries tid (the ticket id), evt (the event) and item
// (the seat or GA unit it admits to). The public keys are published as a JWK
// Set (GET /api/ticket-keys), so a door scanner verifies a code offline;
// checkIn is the online, once-only admission.
//
// Keys come from TICKET_SIGNING_KEY: one secret, or several separated by
// commas. Each secret derives one Ed25519 key (its seed is
// SHA-256("ticketing ticket key v1" || secret)); the first signs, all of
// them verify and are published. Rotation: put the new secret first and keep
// the old ones after it while tickets signed with them are still in use. A
// ticket's code never changes once issued.
package tickets

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Claims is what a code admits to.
type Claims struct {
	TicketID string
	EventID  string
	// Item is "seat:<seatID>" or "ga:<sectionID>:<unitNo>".
	Item string
}

// SeatItem names a seat.
func SeatItem(seatID string) string { return "seat:" + seatID }

// GAItem names a general-admission unit.
func GAItem(sectionID string, unit int) string { return fmt.Sprintf("ga:%s:%d", sectionID, unit) }

// ErrInvalidCode reports a malformed, tampered, unknown-key or wrongly
// signed code.
var ErrInvalidCode = errors.New("tickets: invalid code")

type key struct {
	kid  string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

// Keys signs with its first key and verifies with any of them.
type Keys struct {
	keys []key
}

// NewKeys derives one Ed25519 key per secret; the first one signs.
func NewKeys(secrets ...[]byte) (*Keys, error) {
	if len(secrets) == 0 {
		return nil, errors.New("tickets: no signing key")
	}
	k := &Keys{}
	for _, s := range secrets {
		if len(s) == 0 {
			return nil, errors.New("tickets: empty signing key")
		}
		seed := sha256.Sum256(append([]byte("ticketing ticket key v1"), s...))
		priv := ed25519.NewKeyFromSeed(seed[:])
		pub := priv.Public().(ed25519.PublicKey)
		id := sha256.Sum256(pub)
		k.keys = append(k.keys, key{kid: hex.EncodeToString(id[:8]), priv: priv, pub: pub})
	}
	return k, nil
}

// ParseKeys is NewKeys over TICKET_SIGNING_KEY's comma-separated secrets.
func ParseKeys(setting string) (*Keys, error) {
	var secrets [][]byte
	for _, s := range strings.Split(setting, ",") {
		if s = strings.TrimSpace(s); s != "" {
			secrets = append(secrets, []byte(s))
		}
	}
	return NewKeys(secrets...)
}

// KID is the id of the signing key.
func (k *Keys) KID() string { return k.keys[0].kid }

type payload struct {
	TID  string `json:"tid"`
	EVT  string `json:"evt"`
	Item string `json:"item"`
	jwt.RegisteredClaims
}

// Sign returns the entry code of c.
func (k *Keys) Sign(c Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, payload{TID: c.TicketID, EVT: c.EventID, Item: c.Item})
	t.Header["kid"] = k.keys[0].kid
	return t.SignedString(k.keys[0].priv)
}

// Verify checks code's signature with the key its kid names and returns
// its claims. Errors wrap ErrInvalidCode.
func (k *Keys) Verify(code string) (Claims, error) {
	var p payload
	_, err := jwt.ParseWithClaims(code, &p, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		for _, kk := range k.keys {
			if kk.kid == kid {
				return kk.pub, nil
			}
		}
		return nil, fmt.Errorf("unknown kid %q", kid)
	}, jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}))
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalidCode, err)
	}
	if p.TID == "" || p.EVT == "" {
		return Claims{}, fmt.Errorf("%w: missing tid or evt", ErrInvalidCode)
	}
	return Claims{TicketID: p.TID, EventID: p.EVT, Item: p.Item}, nil
}

// JWK is one public key of the set (RFC 8037: kty OKP, crv Ed25519).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS is the JSON document of GET /api/ticket-keys: {"keys": [...]}, the
// signing key first.
func (k *Keys) JWKS() []byte {
	set := struct {
		Keys []JWK `json:"keys"`
	}{}
	for _, kk := range k.keys {
		set.Keys = append(set.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(kk.pub),
			Kid: kk.kid, Alg: "EdDSA", Use: "sig"})
	}
	b, _ := json.Marshal(set)
	return b
}
