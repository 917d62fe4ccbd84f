package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// HoldCaps counts the tickets held at once from one client address for one
// event (HOLD_LIMIT_PER_ADDRESS): a sorted set per (event, address) whose
// members are "<holdID>:<units>" scored by when they stop counting (the
// hold's expiry). Postgres still decides every hold; this only refuses
// the address that already holds its share.
//
//	<p>holdcap:{eventID}:ADDR         ZSET    holdID:units -> expiry (ms)
//	<p>holdcap:{eventID}:hold:HOLDID  STRING  ADDR, expiring with the hold
//
// The second key finds a hold's address when the hold ends where its
// address is not known (bought, cancelled from elsewhere, event cancelled).
type HoldCaps struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewHoldCaps keeps its keys under prefix.
func NewHoldCaps(rdb redis.UniversalClient, prefix string) *HoldCaps {
	return &HoldCaps{rdb: rdb, prefix: prefix + "holdcap:"}
}

func (c *HoldCaps) key(eventID, addr string) string {
	return c.prefix + "{" + eventID + "}:" + sanitizeKey(addr)
}

func (c *HoldCaps) holdKey(eventID, holdID string) string {
	return c.prefix + "{" + eventID + "}:hold:" + sanitizeKey(holdID)
}

// reserveScript: KEYS the address's set, the hold's address key; ARGV now,
// limit, holdID, units, until, address. Returns -1 when reserved, else the
// units already held.
var reserveScript = redis.NewScript(`
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  held = held + (tonumber(string.match(m, ':(%d+)$')) or 0)
end
if held + tonumber(ARGV[4]) > tonumber(ARGV[2]) then return held end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[3] .. ':' .. ARGV[4])
redis.call('PEXPIRE', KEYS[1], 3700000)
redis.call('SET', KEYS[2], ARGV[6], 'PXAT', ARGV[5])
return -1
`)

// removeScript: KEYS the address's set, the hold's address key; ARGV
// holdID. Removes the hold's member and its address key.
var removeScript = redis.NewScript(`
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(m, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then redis.call('ZREM', KEYS[1], m) end
end
redis.call('DEL', KEYS[2])
return 0
`)

// Reserve counts units of holdID against limit until until; ok is false
// (and nothing is counted) when the address already holds too many.
func (c *HoldCaps) Reserve(ctx context.Context, eventID, addr, holdID string, units, limit int, now, until time.Time) (ok bool, err error) {
	n, err := reserveScript.Run(ctx, c.rdb, []string{c.key(eventID, addr), c.holdKey(eventID, holdID)},
		now.UnixMilli(), limit, holdID, units, until.UnixMilli(), sanitizeKey(addr)).Int64()
	if err != nil {
		return false, err
	}
	return n < 0, nil
}

// Extend makes holdID count until expiresAt (the committed hold's expiry).
// (One slot: both keys carry the event's hash tag.)
func (c *HoldCaps) Extend(ctx context.Context, eventID, addr, holdID string, units int, expiresAt time.Time) error {
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAddXX(ctx, c.key(eventID, addr), redis.Z{Score: float64(expiresAt.UnixMilli()),
			Member: holdID + ":" + itoa(units)})
		p.PExpireAt(ctx, c.holdKey(eventID, holdID), expiresAt)
		return nil
	})
	return err
}

// Release stops counting holdID, under whichever address reserved it.
func (c *HoldCaps) Release(ctx context.Context, eventID, holdID string) error {
	addr, err := c.rdb.Get(ctx, c.holdKey(eventID, holdID)).Result()
	if err == redis.Nil {
		return nil // never counted, released already, or expired
	}
	if err != nil {
		return err
	}
	return removeScript.Run(ctx, c.rdb, []string{c.key(eventID, addr), c.holdKey(eventID, holdID)}, holdID).Err()
}

func itoa(n int) string { return strconv.Itoa(n) }
