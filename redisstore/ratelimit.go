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
// (ms per unit), burst, units spent. Returns 0 when allowed, else the wait
// in ms.
var gcraScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new = tat + t * n
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
	return l.AllowN(ctx, key, lim, 1, now)
}

// AllowN spends n units (bytes, say) of key under lim, Rate units a second
// up to Burst; n above Burst spends Burst (a request larger than the burst
// passes when the budget is full).
func (l *RateLimiter) AllowN(ctx context.Context, key string, lim Limit, n int64, now time.Time) (time.Duration, error) {
	if lim.Rate <= 0 {
		return 0, nil
	}
	interval := 1000 / lim.Rate
	burst := max(lim.Burst, 1)
	n = max(min(n, int64(burst)), 0)
	wait, err := gcraScript.Run(ctx, l.rdb, []string{l.prefix + sanitizeKey(key)},
		now.UnixMilli(), strconv.FormatFloat(interval, 'g', -1, 64), burst, n).Int64()
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
