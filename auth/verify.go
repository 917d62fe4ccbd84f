package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/ticketing/ticketing/apperr"
)

// Leeway is the clock skew tolerated on nbf and iat (the contract allows at
// most 30 s). exp has none: a token is refused from its expiry on.
const Leeway = 30 * time.Second

// Config is what a Verifier needs (app fills it from the process
// configuration's JWT_* settings).
type Config struct {
	Issuer   string
	Audience string
	// HS256Secret enables HS256; empty means HS256 tokens are refused.
	HS256Secret string
	// PublicKeyFile is a PEM file with one or more RSA or ECDSA P-256 public
	// keys (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE blocks).
	PublicKeyFile string
	// JWKSURL is fetched lazily and its keys cached by kid.
	JWKSURL string
	// HTTPClient fetches the JWKS; nil means a client with a 5 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Verifier checks bearer tokens against the contract: an algorithm
// allow-list, exp required (and strict), iss, aud, a non-empty sub, nbf/iat
// with Leeway.
// It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	methods []string
	// fileKeys are the keys of PublicKeyFile (used for tokens without a kid
	// or whose kid is not in the JWKS).
	fileKeys []any
	jwks     *jwks
	parser   *jwt.Parser
	// verified caches tokens that passed Verify (see verifiedTTL).
	verified *lru.Cache[string, verifiedToken]
}

// Verified tokens are cached by their exact string: a client sends the same
// token on every request, and parsing it (base64, JSON, claims checks) costs
// more than the HMAC. An entry is used until the token's exp but never
// longer than verifiedTTL, so a key removed
// from the JWKS stops being honoured within that time. Only successes are
// cached; any change to the token is another key.
const (
	verifiedTTL  = time.Minute
	verifiedSize = 16384
)

type verifiedToken struct {
	user  User
	exp   time.Time // the token's exp
	until time.Time // when the entry stops being used
}

// claims is the token payload we read.
type claims struct {
	jwt.RegisteredClaims
	Roles []string `json:"roles"`
}

// NewVerifier loads the keys of cfg. A Verifier without any key refuses every
// token (anonymous requests still work).
func NewVerifier(cfg Config) (*Verifier, error) {
	v := &Verifier{cfg: cfg}
	v.verified, _ = lru.New[string, verifiedToken](verifiedSize) // errors only for a size <= 0
	if cfg.Now == nil {
		v.cfg.Now = time.Now
	}
	if cfg.HS256Secret != "" {
		v.methods = append(v.methods, jwt.SigningMethodHS256.Alg())
	}
	if cfg.PublicKeyFile != "" {
		keys, err := loadPEMKeys(cfg.PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("JWT_PUBLIC_KEY_FILE: %w", err)
		}
		v.fileKeys = keys
	}
	if cfg.JWKSURL != "" {
		client := cfg.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: 5 * time.Second}
		}
		v.jwks = newJWKS(cfg.JWKSURL, client, v.cfg.Now)
	}
	if cfg.PublicKeyFile != "" || cfg.JWKSURL != "" {
		v.methods = append(v.methods, jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg())
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(v.methods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithLeeway(Leeway),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(v.cfg.Now),
	)
	return v, nil
}

// Verify checks token (without the "Bearer " prefix) and returns its caller.
// Every failure wraps apperr.ErrUnauthenticated.
func (v *Verifier) Verify(token string) (User, error) {
	u, _, err := v.VerifyUntil(token)
	return u, err
}

// VerifyUntil is Verify that also returns when the token expires (its exp),
// for connections that outlive one request.
func (v *Verifier) VerifyUntil(token string) (User, time.Time, error) {
	if len(v.methods) == 0 {
		return User{}, time.Time{}, fmt.Errorf("%w: no token verification key is configured", apperr.ErrUnauthenticated)
	}
	now := v.cfg.Now()
	if e, ok := v.verified.Get(token); ok && now.Before(e.until) {
		return e.user, e.exp, nil
	}
	var c claims
	if _, err := v.parser.ParseWithClaims(token, &c, v.keyFunc); err != nil {
		return User{}, time.Time{}, fmt.Errorf("%w: %v", apperr.ErrUnauthenticated, err)
	}
	// The parser allowed Leeway on exp too; the contract allows it on nbf
	// and iat only. exp is required, so c.ExpiresAt is set.
	exp := c.ExpiresAt.Time
	if !now.Before(exp) {
		return User{}, time.Time{}, fmt.Errorf("%w: token is expired", apperr.ErrUnauthenticated)
	}
	if strings.TrimSpace(c.Subject) == "" {
		return User{}, time.Time{}, fmt.Errorf("%w: token has no sub", apperr.ErrUnauthenticated)
	}
	if !storableSubject(c.Subject) {
		// The sub is stored as the owner of holds and orders: a NUL byte
		// (which Postgres cannot store) or control characters are refused.
		return User{}, time.Time{}, fmt.Errorf("%w: the token's sub is not a usable user id", apperr.ErrUnauthenticated)
	}
	u := User{ID: c.Subject, Roles: slices.Clip(c.Roles)} // Clip: an append by a caller never writes into the cached entry
	v.verified.Add(token, verifiedToken{user: u, exp: exp, until: minTime(exp, now.Add(verifiedTTL))})
	return u, exp, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// keyFunc picks the verification key by algorithm (and kid). The HS256 key is
// only ever the shared secret, never public key material, which is what
// defeats RS/HS confusion.
func (v *Verifier) keyFunc(t *jwt.Token) (any, error) {
	switch t.Method.Alg() {
	case "HS256":
		if v.cfg.HS256Secret == "" {
			return nil, errors.New("HS256 is not enabled")
		}
		return []byte(v.cfg.HS256Secret), nil
	case "RS256", "ES256":
	default:
		return nil, fmt.Errorf("unexpected algorithm %q", t.Method.Alg())
	}
	wantRSA := t.Method.Alg() == "RS256"
	fits := func(k any) bool {
		switch k := k.(type) {
		case *rsa.PublicKey:
			return wantRSA
		case *ecdsa.PublicKey:
			return !wantRSA && k.Curve == elliptic.P256()
		}
		return false
	}
	var set jwt.VerificationKeySet
	if kid, _ := t.Header["kid"].(string); kid != "" && v.jwks != nil {
		k, err := v.jwks.key(kid)
		if err != nil {
			return nil, err
		}
		if k != nil {
			if !fits(k) {
				return nil, fmt.Errorf("key %q does not fit %s", kid, t.Method.Alg())
			}
			return k, nil
		}
	}
	for _, k := range v.fileKeys {
		if fits(k) {
			set.Keys = append(set.Keys, k)
		}
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("no %s key for this token", t.Method.Alg())
	}
	return set, nil
}

// loadPEMKeys reads every public key of a PEM file.
func loadPEMKeys(path string) ([]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []any
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var k any
		switch block.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			k, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				k = cert.PublicKey
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s block: %w", block.Type, err)
		}
		switch k.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			keys = append(keys, k)
		default:
			return nil, fmt.Errorf("unsupported key type %T (want RSA or ECDSA P-256)", k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no public key found (want a PEM PUBLIC KEY block)")
	}
	return keys, nil
}

// Mint returns an HS256 token for sub, for development and tests.
func Mint(secret, issuer, audience, sub string, roles []string, ttl time.Duration) (string, error) {
	if secret == "" {
		return "", errors.New("JWT_HS256_SECRET is not set")
	}
	now := time.Now()
	if roles == nil {
		roles = []string{}
	}
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   sub,
			Audience:  jwt.ClaimStrings{audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Roles: roles,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
}

// MaxSubjectLength is the longest sub accepted (it is stored with every
// hold and order).
const MaxSubjectLength = 255

// storableSubject reports whether sub is valid UTF-8, at most
// MaxSubjectLength bytes, without control characters.
func storableSubject(sub string) bool {
	if len(sub) > MaxSubjectLength || !utf8.ValidString(sub) {
		return false
	}
	for _, r := range sub {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
