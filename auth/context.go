// Package auth verifies the JWTs of the API contract and carries the caller
// in the request context.
package auth

import (
	"context"
	"slices"
	"time"

	"github.com/ticketing/ticketing/apperr"
)

// User is the authenticated caller.
type User struct {
	ID    string
	Roles []string
}

// IsAdmin reports whether the caller may administer the catalog.
func (u User) IsAdmin() bool { return slices.Contains(u.Roles, "admin") }

// IsStaff reports whether the caller may admit tickets at the door
// (checkIn): the staff or the admin role.
func (u User) IsStaff() bool { return u.IsAdmin() || slices.Contains(u.Roles, "staff") }

type ctxKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

type expKey struct{}

// WithUserUntil is WithUser for a caller whose token expires at exp.
func WithUserUntil(ctx context.Context, u User, exp time.Time) context.Context {
	return context.WithValue(WithUser(ctx, u), expKey{}, exp)
}

// UserExpiry returns when the caller's token expires, if known.
func UserExpiry(ctx context.Context) (time.Time, bool) {
	exp, ok := ctx.Value(expKey{}).(time.Time)
	return exp, ok
}

// UserFrom returns the caller, if the request was authenticated.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(ctxKey{}).(User)
	return u, ok
}

// Require returns the caller or apperr.ErrUnauthenticated.
func Require(ctx context.Context) (User, error) {
	u, ok := UserFrom(ctx)
	if !ok || u.ID == "" {
		return User{}, apperr.ErrUnauthenticated
	}
	return u, nil
}

// RequireAdmin returns the caller if it has the admin role, else
// ErrUnauthenticated or ErrForbidden.
func RequireAdmin(ctx context.Context) (User, error) {
	u, err := Require(ctx)
	if err != nil {
		return u, err
	}
	if !u.IsAdmin() {
		return u, apperr.ErrForbidden
	}
	return u, nil
}

// RequireStaff returns the caller if it has the staff or admin role, else
// ErrUnauthenticated or ErrForbidden.
func RequireStaff(ctx context.Context) (User, error) {
	u, err := Require(ctx)
	if err != nil {
		return u, err
	}
	if !u.IsStaff() {
		return u, apperr.ErrForbidden
	}
	return u, nil
}
