package queue

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketing/ticketing/apperr"
)

// Admission tokens are HS256 JWTs signed with QUEUE_SIGNING_KEY. Their own
// issuer, audience and "typ" header keep them apart from user JWTs: a user
// JWT (different key, audience JWT_AUDIENCE) never passes as a permit, and a
// permit (audience below) never passes as a user JWT.
const (
	tokenIssuer   = "ticketing-queue"
	tokenAudience = "ticketing-queue-admission"
	tokenType     = "queue-admission+jwt"
)

type admissionClaims struct {
	Event string `json:"evt"`
	jwt.RegisteredClaims
}

// mint signs the permit of userID for eventID, valid until exp (rounded down
// to the second, so it never outlives the admission slot). The same admission
// always gives the same token.
func (s *Service) mint(userID, eventID string, exp time.Time) (string, time.Time) {
	exp = exp.Truncate(time.Second)
	c := admissionClaims{Event: eventID, RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    tokenIssuer,
		Subject:   userID,
		Audience:  jwt.ClaimStrings{tokenAudience},
		ExpiresAt: jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(exp.Add(-s.cfg.AdmissionTTL)),
	}}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["typ"] = tokenType
	signed, err := t.SignedString(s.cfg.SigningKey)
	if err != nil { // only with an unusable key, which New refuses
		panic(err)
	}
	return signed, exp
}

// Verify checks an admission token offline (no Redis): HS256 signature with
// the queue signing key, the permit's type, issuer and audience, not expired
// (no leeway), issued to userID for eventID. Any failure is
// apperr.ErrQueueAdmissionRequired (wrapped with the reason). Verify keeps
// working while Redis is down; a token stays valid until it expires even if
// its slot was released or left.
func (s *Service) Verify(token, userID, eventID string) error {
	if token == "" || userID == "" || eventID == "" {
		return fmt.Errorf("queue: %w: no admission token", apperr.ErrQueueAdmissionRequired)
	}
	var c admissionClaims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if t.Header["typ"] != tokenType {
			return nil, errors.New("not an admission token")
		}
		return s.cfg.SigningKey, nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithAudience(tokenAudience),
		jwt.WithSubject(userID),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now),
	)
	if err == nil && c.Event != eventID {
		err = errors.New("token of another event")
	}
	if err != nil {
		return fmt.Errorf("queue: %w: %v", apperr.ErrQueueAdmissionRequired, err)
	}
	return nil
}
