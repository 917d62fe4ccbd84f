package holds

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketing/ticketing/apperr"
)

// LeaseStore is the Redis side of holds (redisstore.Leases). Leases are an
// optimisation: a present key never grants a seat and an absent key never
// revokes one; Postgres decides.
type LeaseStore interface {
	// Acquire sets each seat's lease with SET NX PX ttl and returns, per
	// seat, "" if it is ours or the value of the lease already there.
	Acquire(ctx context.Context, eventID string, seatIDs []string, value string, ttl time.Duration) ([]string, error)
	// Set overwrites the seats' leases with value, expiring at expireAt.
	Set(ctx context.Context, eventID string, seatIDs []string, value string, expireAt time.Time) error
	// Release deletes the seats' leases that still belong to holdID
	// (compare-and-delete).
	Release(ctx context.Context, eventID string, seatIDs []string, holdID string) error
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
}

// errLeaseConflict carries the seats whose leases belong to an attempt of
// another user still in flight.
type errLeaseConflict struct{ seats []string }

func (e errLeaseConflict) Error() string { return "seats leased by another attempt" }

// leaseValue is "<holdID>:<owner>:<unixMillis>".
func leaseValue(holdID, owner string, at time.Time) string {
	return holdID + ":" + owner + ":" + strconv.FormatInt(at.UnixMilli(), 10)
}

// parseLease splits a lease value; the owner may itself contain colons.
func parseLease(v string) (holdID, owner string, at time.Time, ok bool) {
	i, j := strings.IndexByte(v, ':'), strings.LastIndexByte(v, ':')
	if i < 0 || j <= i {
		return "", "", time.Time{}, false
	}
	ms, err := strconv.ParseInt(v[j+1:], 10, 64)
	if err != nil {
		return "", "", time.Time{}, false
	}
	return v[:i], v[i+1 : j], time.UnixMilli(ms), true
}

// acquireLeases takes the provisional leases of explicit seats before the
// transaction. A seat whose lease belongs to another user's attempt younger
// than the in-flight window is a fast conflict (errLeaseConflict, our leases
// released); an older lease is ignored (Postgres decides, and our lease
// overwrites it on success). It returns the seats whose lease is ours.
func (s *Service) acquireLeases(ctx context.Context, user, eventID string, seats []string, value, holdID string, ttl time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RedisTimeout)
	defer cancel()
	cur, err := s.leases.Acquire(ctx, eventID, seats, value, ttl)
	if err != nil {
		return nil, err
	}
	var ours, busy []string
	now := s.cfg.Now()
	for i, v := range cur {
		if v == "" {
			ours = append(ours, seats[i])
			continue
		}
		_, owner, at, ok := parseLease(v)
		if ok && owner != user && now.Sub(at) < s.cfg.InFlightWindow {
			busy = append(busy, seats[i])
		}
	}
	if len(busy) > 0 {
		s.releaseLeases(eventID, ours, holdID)
		return nil, errLeaseConflict{busy}
	}
	return ours, nil
}

// releaseLeases compare-and-deletes our leases; failures only cost time.
func (s *Service) releaseLeases(eventID string, seats []string, holdID string) {
	if len(seats) == 0 || !s.leasesUsable() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RedisTimeout)
	defer cancel()
	if err := s.leases.Release(ctx, eventID, seats, holdID); err != nil {
		s.redisFailed(err)
	}
}

// setLeases publishes the committed hold's leases with its expires_at.
func (s *Service) setLeases(eventID string, seats []string, value string, expiresAt time.Time) {
	if len(seats) == 0 || !s.leasesUsable() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RedisTimeout)
	defer cancel()
	if err := s.leases.Set(ctx, eventID, seats, value, expiresAt); err != nil {
		s.redisFailed(err)
	}
}

// health tracks whether Redis is usable. When degraded, requests skip Redis
// entirely and one background probe per ProbeInterval checks for recovery.
type health struct {
	degraded  atomic.Bool
	probing   atomic.Bool
	lastProbe atomic.Int64 // unix nanos
	wg        sync.WaitGroup
}

// Degraded reports whether holds currently run without Redis leases
// (Postgres alone, bounded concurrency); for readiness reporting.
func (s *Service) Degraded() bool { return s.health.degraded.Load() }

// leasesUsable reports whether to use Redis now; when degraded it may start
// a recovery probe.
func (s *Service) leasesUsable() bool {
	if s.leases == nil {
		return false
	}
	if !s.health.degraded.Load() {
		return true
	}
	s.maybeProbe()
	return false
}

// redisFailed enters degraded mode after a Redis error or timeout.
func (s *Service) redisFailed(err error) {
	s.health.lastProbe.Store(time.Now().UnixNano())
	if !s.health.degraded.Swap(true) {
		s.metrics.fallback.Set(1)
		s.cfg.Log.Warn("redis leases unavailable: holds fall back to Postgres alone", "err", err)
	}
}

func (s *Service) maybeProbe() {
	if time.Since(time.Unix(0, s.health.lastProbe.Load())) < s.cfg.ProbeInterval ||
		!s.health.probing.CompareAndSwap(false, true) {
		return
	}
	s.health.lastProbe.Store(time.Now().UnixNano())
	s.health.wg.Add(1)
	go func() {
		defer s.health.wg.Done()
		defer s.health.probing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RedisTimeout)
		defer cancel()
		if err := s.leases.Ping(ctx); err == nil && s.health.degraded.Swap(false) {
			s.metrics.fallback.Set(0)
			s.cfg.Log.Info("redis leases recovered")
		}
	}()
}

// enterFallback bounds the concurrent hold transactions while Redis is
// unavailable; it fails with apperr.ErrServiceUnavailable after
// FallbackWait.
func (s *Service) enterFallback(ctx context.Context) (release func(), err error) {
	s.metrics.fallbackTotal.Inc()
	t := time.NewTimer(s.cfg.FallbackWait)
	defer t.Stop()
	select {
	case s.fallbackSem <- struct{}{}:
		return func() { <-s.fallbackSem }, nil
	case <-t.C:
		return nil, fmt.Errorf("hold fallback: %w", apperr.ErrServiceUnavailable)
	case <-ctx.Done():
		return nil, errors.Join(apperr.ErrServiceUnavailable, ctx.Err())
	}
}
