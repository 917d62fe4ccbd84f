package redisstore

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateLimiter is a GCRA rate limiter (the generic cell rate algorithm, as
// the queue's join limits use): one Redis key per limited subject holding
// its theoretical arrival time, so any number of API instances share the
// limits. One key per call, so it works unchanged on Redis Cluster.
type RateLimiter struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRateLimiter keeps its keys under prefix + "rl:".
func NewRateLimiter(rdb redis.UniversalClient, prefix string) *RateLimiter {
	return &RateLimiter{rdb: rdb, prefix: prefix + "rl:"}
}

// gcraScript: KEYS[1] the subject's key; ARGV: now (ms), emission interval
// (ms per request), burst. Returns 0 when allowed, else the wait in ms.
var gcraScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new = tat + t
local allow = new - burst * t
if allow > now then
  return math.ceil(allow - now)
end
redis.call('SET', KEYS[1], tostring(new), 'PX', math.ceil(new - now))
return 0
`)

// Allow spends one request of key under lim; it returns 0 when allowed, or
// how long to wait. A zero Rate allows everything.
func (l *RateLimiter) Allow(ctx context.Context, key string, lim Limit, now time.Time) (time.Duration, error) {
	if lim.Rate <= 0 {
		return 0, nil
	}
	interval := 1000 / lim.Rate
	burst := max(lim.Burst, 1)
	wait, err := gcraScript.Run(ctx, l.rdb, []string{l.prefix + sanitizeKey(key)},
		now.UnixMilli(), strconv.FormatFloat(interval, 'f', 3, 64), burst).Int64()
	if err != nil {
		return 0, err
	}
	return time.Duration(min(wait, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, nil
}

// sanitizeKey keeps a key printable and short (an address or a user id
// comes from the client).
func sanitizeKey(k string) string {
	if len(k) > 200 {
		k = k[:200]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r == 0x7f {
			return '_'
		}
		return r
	}, k)
}
