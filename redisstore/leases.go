// Package redisstore holds the Redis adapters of the product. Redis is an
// optimisation and a projection: nothing here decides who gets a seat.
package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Leases are provisional per-seat leases shared by every instance:
// key <prefix>lease:{<eventID>}:<seatID>, value "<holdID>:<owner>:<unixMillis>".
type Leases struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewLeases returns leases on rdb with keys under prefix.
func NewLeases(rdb redis.UniversalClient, prefix string) *Leases {
	return &Leases{rdb: rdb, prefix: prefix}
}

// Key is the lease key of a seat of an event.
func (l *Leases) Key(eventID, seatID string) string {
	return l.prefix + "lease:{" + eventID + "}:" + seatID
}

func (l *Leases) keys(eventID string, seatIDs []string) []string {
	keys := make([]string, len(seatIDs))
	for i, s := range seatIDs {
		keys[i] = l.Key(eventID, s)
	}
	return keys
}

// acquireScript sets every key NX with the TTL and returns, per key, "" if it
// was set or the value already there.
var acquireScript = redis.NewScript(`
local out = {}
for i, k in ipairs(KEYS) do
  if redis.call('SET', k, ARGV[1], 'NX', 'PX', ARGV[2]) then
    out[i] = ''
  else
    out[i] = redis.call('GET', k) or ''
  end
end
return out`)

// releaseScript deletes each key whose value starts with ARGV[1] (the hold
// id and a colon): compare-and-delete, so a lease taken since by another
// attempt is never removed.
var releaseScript = redis.NewScript(`
local n = 0
for _, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
    n = n + redis.call('DEL', k)
  end
end
return n`)

// Acquire sets the leases of the seats that have none (SET NX PX ttl, one
// atomic script) and returns, per seat, "" if ours now or the current value
// of another lease.
func (l *Leases) Acquire(ctx context.Context, eventID string, seatIDs []string, value string, ttl time.Duration) ([]string, error) {
	ms := ttl.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	res, err := acquireScript.Run(ctx, l.rdb, l.keys(eventID, seatIDs), value, ms).StringSlice()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Set overwrites the leases of the seats with value, expiring at expireAt
// (SET PXAT: the TTL comes from the committed expires_at, never extended).
// It is called only after Postgres committed these seats to the hold, so it
// needs no compare: any other lease on them belongs to an attempt Postgres
// refuses, and that attempt's compare-and-delete release leaves this one.
func (l *Leases) Set(ctx context.Context, eventID string, seatIDs []string, value string, expireAt time.Time) error {
	if len(seatIDs) == 0 || !expireAt.After(time.Now()) {
		return nil
	}
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range l.keys(eventID, seatIDs) {
			p.SetArgs(ctx, k, value, redis.SetArgs{ExpireAt: expireAt})
		}
		return nil
	})
	return err
}

// Release deletes the seats' leases that still belong to holdID
// (compare-and-delete in Lua).
func (l *Leases) Release(ctx context.Context, eventID string, seatIDs []string, holdID string) error {
	if len(seatIDs) == 0 {
		return nil
	}
	return releaseScript.Run(ctx, l.rdb, l.keys(eventID, seatIDs), holdID+":").Err()
}

// Ping checks that Redis answers.
func (l *Leases) Ping(ctx context.Context) error { return l.rdb.Ping(ctx).Err() }
