package redisstore

// The virtual waiting room's Redis state. Every multi-key decision is one Lua
// script, so any number of API instances and admission controllers can share
// a queue without double admission.
//
// Every key a script touches carries the hash tag {eventID}, so each
// script stays in one Redis Cluster slot (one node holds an event's queue,
// its join limits and its leases). The controller's work list is the one
// global key; scripts never touch it (see Join and Admit).
//
//	<p>queue:{E}:pre   ZSET user -> random score; joins before the sale opens
//	<p>queue:{E}:q     ZSET user -> sequence (INCR); the ordered queue
//	<p>queue:{E}:seq   STRING sequence counter
//	<p>queue:{E}:adm   ZSET user -> admission expiry (unix ms)
//	<p>queue:{E}:exp   ZSET user -> when the admission expired (kept 1 h)
//	<p>queue:{E}:jt    HASH user -> join time (unix ms), for time-in-queue
//	<p>queue:{E}:meta  HASH start, open, epoch, hold, tokens, tbts, rate, rts
//	<p>queue:{E}:listed SET {E} while the event has queue activity (the truth
//	                   behind the work list, written by the scripts)
//	<p>queue:events    SET of events with queue activity (the controller's
//	                   work list, an index of the :listed keys kept by Go)
//	<p>queue:{E}:rl:u:U / <p>queue:{E}:rl:a:ADDR   GCRA rate-limit state
//	                   (theoretical arrival time), per event
//	<p>queue:{E}:changed  sharded pub/sub channel (SPUBLISH/SSUBSCRIBE): the
//	                   event's queue moved

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// QueueStore keeps the per-event virtual queues in Redis.
type QueueStore struct {
	rdb    redis.UniversalClient
	prefix string
	// batch carries joins and position reads, the calls made per user
	// request; see batcher.
	batch *batcher
}

// QueueOption configures a QueueStore.
type QueueOption func(*queueOptions)

type queueOptions struct{ stall time.Duration }

// WithStallTimeout sets how long Redis may leave a pipeline of joins and
// position reads unanswered before it, and every call waiting with it,
// fails (default DefaultStallTimeout). Waiting behind other calls is not a
// stall.
func WithStallTimeout(d time.Duration) QueueOption {
	return func(o *queueOptions) { o.stall = d }
}

// NewQueueStore returns a QueueStore whose keys all start with prefix.
// Close it when done.
func NewQueueStore(rdb redis.UniversalClient, prefix string, opts ...QueueOption) *QueueStore {
	var o queueOptions
	for _, f := range opts {
		f(&o)
	}
	return &QueueStore{rdb: rdb, prefix: prefix, batch: newBatcher(rdb, o.stall)}
}

// Close stops the store's background pipelining; later joins and reads fail.
func (s *QueueStore) Close() { s.batch.close() }

// QueueState is where a user stands in an event's queue.
type QueueState int

// The states of a user in a queue.
const (
	QueueNone     QueueState = iota // not in the queue
	QueueWaiting                    // waiting; Place.Position is 1-based
	QueueAdmitted                   // admitted until Place.ExpiresAt
	QueueExpired                    // admitted, but the window passed unused
)

// Place is a user's place in a queue, with the event's measured admission
// rate (an EWMA, admissions per second, last updated at RateAt).
type Place struct {
	State     QueueState
	Position  int64
	ExpiresAt time.Time
	Rate      float64
	RateAt    time.Time
}

// Limit is a GCRA rate limit: Rate requests per second with bursts of Burst.
// A zero Rate disables it.
type Limit struct {
	Rate  float64
	Burst int
}

// RateLimitedError reports a refused join and when to retry.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string { return "queue join rate limited" }

// JoinRequest is one joinQueue call.
type JoinRequest struct {
	EventID, UserID string
	// Addr is the client address ("" to skip the address limit).
	Addr      string
	Now       time.Time
	SaleStart time.Time
	// Epoch is a random id stored when the queue's state is first created; a
	// new epoch tells the controllers that Redis lost the queue.
	Epoch            string
	UserLim, AddrLim Limit
}

// AdmitParams are the admission controller's settings for one run.
type AdmitParams struct {
	Now    time.Time
	Rate   float64 // admissions per second
	Burst  int
	Window int // most admitted-but-unfinished users
	TTL    time.Duration
	Tau    time.Duration // EWMA time constant of the measured rate
	// KnownEpoch/KnownHold: the epoch this controller saw last and the
	// latest admission expiry it saw in it. If the epoch changed (Redis lost
	// the queue) admissions wait until KnownHold, because permits issued
	// before are still valid.
	KnownEpoch string
	KnownHold  time.Time
}

// AdmitResult is what one admission run did and saw.
type AdmitResult struct {
	Admitted []string
	JoinedAt []time.Time // join time of each admitted user (zero if unknown)
	Waiting  int64       // still in the queue (ordered queue plus pre-queue)
	Active   int64       // admitted and not expired
	// MaxExpiry is the latest admission expiry in the queue (zero if none).
	MaxExpiry time.Time
	Epoch     string
	Rate      float64
	// Idle is true when the event had nothing left and left the work list.
	Idle bool
}

func (s *QueueStore) key(eventID, part string) string {
	return s.prefix + "queue:{" + eventID + "}:" + part
}

// eventKeys: pre, q, seq, adm, exp, jt, meta, events.
func (s *QueueStore) eventKeys(eventID string) []string {
	return []string{
		s.key(eventID, "pre"), s.key(eventID, "q"), s.key(eventID, "seq"),
		s.key(eventID, "adm"), s.key(eventID, "exp"), s.key(eventID, "jt"),
		s.key(eventID, "meta"), s.key(eventID, "listed"),
	}
}

// workList is the global set of events with queue activity.
func (s *QueueStore) workList() string { return s.prefix + "queue:events" }

// Channel is the pub/sub channel announcing that an event's queue moved.
func (s *QueueStore) Channel(eventID string) string { return s.key(eventID, "changed") }

// luaOpen moves the pre-queue, in its random order, to the ordered queue and
// marks the queue open. KEYS as eventKeys.
const luaOpen = `
local function open_queue()
  if redis.call('HGET', KEYS[7], 'open') == '1' then return end
  local members = redis.call('ZRANGE', KEYS[1], 0, -1)
  local n = #members
  if n > 0 then
    local base = redis.call('INCRBY', KEYS[3], n) - n
    local i = 1
    while i <= n do
      local args = {}
      local j = i
      while j <= n and j < i + 1000 do
        args[#args + 1] = base + j
        args[#args + 1] = members[j]
        j = j + 1
      end
      redis.call('ZADD', KEYS[2], unpack(args))
      i = j
    end
    redis.call('DEL', KEYS[1])
  end
  redis.call('HSET', KEYS[7], 'open', '1')
end
local function open_if_due(now)
  local start = tonumber(redis.call('HGET', KEYS[7], 'start') or 'x')
  if start and now >= start then open_queue() end
end
-- place returns {state, value}: 1 waiting (position), 2 admitted (expiry),
-- 3 expired, 0 none.
local function place(user, now)
  local a = redis.call('ZSCORE', KEYS[4], user)
  if a then
    if tonumber(a) > now then return {2, tonumber(a)} end
    return {3, 0}
  end
  local r = redis.call('ZRANK', KEYS[2], user)
  if r then return {1, r + 1} end
  r = redis.call('ZRANK', KEYS[1], user)
  if r then return {1, r + 1} end
  if redis.call('ZSCORE', KEYS[5], user) then return {3, 0} end
  return {0, 0}
end
-- listed is 1 when this call put the event on its :listed key (Join then
-- adds it to the global work list).
local listed = 0
local function with_rate(p)
  local m = redis.call('HMGET', KEYS[7], 'rate', 'rts')
  p[3] = m[1] or '0'
  p[4] = m[2] or '0'
  p[5] = listed
  return p
end
`

// KEYS: eventKeys + rl user, rl addr. ARGV: user, now, start, event,
// epoch, user ms/token, user burst, addr ms/token, addr burst.
var joinScript = redis.NewScript(luaOpen + `
local now = tonumber(ARGV[2])
local function gcra(key, t, burst)
  if t <= 0 then return nil, 0 end
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local new = tat + t
  local allow = new - burst * t
  if now < allow then return nil, allow - now end
  return new, 0
end
local un, uw = gcra(KEYS[9], tonumber(ARGV[6]), tonumber(ARGV[7]))
if uw > 0 then return {-1, math.ceil(uw)} end
local an, aw = gcra(KEYS[10], tonumber(ARGV[8]), tonumber(ARGV[9]))
if aw > 0 then return {-1, math.ceil(aw)} end
if un then redis.call('SET', KEYS[9], tostring(un), 'PX', math.ceil(un - now)) end
if an then redis.call('SET', KEYS[10], tostring(an), 'PX', math.ceil(an - now)) end

local user = ARGV[1]
redis.call('HSETNX', KEYS[7], 'epoch', ARGV[5])
redis.call('HSET', KEYS[7], 'start', ARGV[3])
open_if_due(now)
local p = place(user, now)
if p[1] == 1 or p[1] == 2 then return with_rate(p) end
-- new place (or back of the queue after an unused admission)
redis.call('ZREM', KEYS[4], user)
redis.call('ZREM', KEYS[5], user)
redis.call('HSET', KEYS[6], user, now)
listed = redis.call('SADD', KEYS[8], ARGV[4])
if redis.call('HGET', KEYS[7], 'open') == '1' then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), user)
  return with_rate({1, redis.call('ZCARD', KEYS[2])})
end
-- The pre-opening draw is a function of the queue's epoch and the user, so
-- leaving and joining again cannot re-draw it.
local draw = tonumber(string.sub(redis.sha1hex(redis.call('HGET', KEYS[7], 'epoch') .. '|' .. user), 1, 13), 16)
redis.call('ZADD', KEYS[1], draw, user)
return with_rate({1, redis.call('ZRANK', KEYS[1], user) + 1})
`)

// KEYS: eventKeys. ARGV: user, now.
var stateScript = redis.NewScript(luaOpen + `
local now = tonumber(ARGV[2])
open_if_due(now)
return with_rate(place(ARGV[1], now))
`)

// KEYS: eventKeys. ARGV: now, user... Reply: rate, rts, then state and
// value of each user, in order.
var statesScript = redis.NewScript(luaOpen + `
local now = tonumber(ARGV[1])
open_if_due(now)
local m = redis.call('HMGET', KEYS[7], 'rate', 'rts')
local out = {m[1] or '0', m[2] or '0'}
for i = 2, #ARGV do
  local p = place(ARGV[i], now)
  out[#out + 1] = p[1]
  out[#out + 1] = p[2]
end
return out
`)

// KEYS: eventKeys. ARGV: now, rate/s, burst, window, ttl ms, event, tau ms,
// known epoch, known hold (ms).
var admitScript = redis.NewScript(luaOpen + `
local now = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[7]) == 0 then
  redis.call('SREM', KEYS[8], ARGV[6])
  return {0, 0, 0, 0, '', '0', 1}
end
-- unused admissions whose window passed free their slot
local gone = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, m in ipairs(gone) do redis.call('ZADD', KEYS[5], now, m) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - 3600000)
open_if_due(now)

local epoch = redis.call('HGET', KEYS[7], 'epoch') or ''
local hold = tonumber(redis.call('HGET', KEYS[7], 'hold') or '0')
if ARGV[8] ~= '' and ARGV[8] ~= epoch and tonumber(ARGV[9]) > hold then
  hold = tonumber(ARGV[9])
  redis.call('HSET', KEYS[7], 'hold', hold)
end

local waiting = redis.call('ZCARD', KEYS[2])
local active = redis.call('ZCARD', KEYS[4])
local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(redis.call('HGET', KEYS[7], 'tokens') or ARGV[3])
local ts = tonumber(redis.call('HGET', KEYS[7], 'tbts') or ARGV[1])
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
  ts = now
end
local n = math.min(math.floor(tokens), tonumber(ARGV[4]) - active, waiting, 1000)
if now < hold or n < 0 then n = 0 end

local out, jts = {}, {}
if n > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], n)
  local zargs = {}
  local exp = now + tonumber(ARGV[5])
  for i = 1, #popped, 2 do
    out[#out + 1] = popped[i]
    zargs[#zargs + 1] = exp
    zargs[#zargs + 1] = popped[i]
  end
  redis.call('ZADD', KEYS[4], unpack(zargs))
  jts = redis.call('HMGET', KEYS[6], unpack(out))
  redis.call('HDEL', KEYS[6], unpack(out))
  tokens = tokens - n
end
redis.call('HSET', KEYS[7], 'tokens', tostring(tokens), 'tbts', ts)

-- measured admission rate: EWMA over the runs that had someone waiting
local r = tonumber(redis.call('HGET', KEYS[7], 'rate') or '-1')
local rts = tonumber(redis.call('HGET', KEYS[7], 'rts') or '0')
if now > rts then
  if waiting > 0 and rts > 0 then
    local dt = (now - rts) / 1000
    if r < 0 then r = n / dt else
      local alpha = 1 - math.exp(-dt * 1000 / tonumber(ARGV[7]))
      r = r + alpha * (n / dt - r)
    end
    redis.call('HSET', KEYS[7], 'rate', tostring(r))
  end
  redis.call('HSET', KEYS[7], 'rts', now)
end

local pre = redis.call('ZCARD', KEYS[1])
waiting = waiting - n + pre
active = active + n
local maxexp = 0
local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
if #last == 2 then maxexp = tonumber(last[2]) end
local idle = 0
if waiting == 0 and active == 0 and redis.call('HGET', KEYS[7], 'open') == '1' then
  redis.call('SREM', KEYS[8], ARGV[6])
  idle = 1
end
if r < 0 then r = 0 end
local res = {n, waiting, active, maxexp, epoch, tostring(r), idle}
for i = 1, n do
  res[#res + 1] = out[i]
  res[#res + 1] = jts[i] or '0'
end
return res
`)

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func msPerToken(l Limit) float64 {
	if l.Rate <= 0 {
		return 0
	}
	return 1000 / l.Rate
}

// Join places the user in the event's queue, or returns the place it already
// has (idempotent). It fails with *RateLimitedError when a limit refuses the
// call, and with the Redis error when Redis cannot answer.
func (s *QueueStore) Join(ctx context.Context, r JoinRequest) (Place, error) {
	keys := append(s.eventKeys(r.EventID),
		s.key(r.EventID, "rl:u:"+r.UserID), s.key(r.EventID, "rl:a:"+r.Addr))
	addrT := msPerToken(r.AddrLim)
	if r.Addr == "" {
		addrT = 0
	}
	v, err := s.batch.run(ctx, joinScript, keys, r.UserID, ms(r.Now), ms(r.SaleStart),
		r.EventID, r.Epoch, msPerToken(r.UserLim), r.UserLim.Burst, addrT, r.AddrLim.Burst)
	if err != nil {
		return Place{}, fmt.Errorf("queue join: %w", err)
	}
	if n, _ := v[0].(int64); n == -1 {
		wait, _ := v[1].(int64)
		return Place{}, &RateLimitedError{RetryAfter: time.Duration(wait) * time.Millisecond}
	}
	if len(v) == 5 && v[4] == int64(1) {
		// First activity since the event left the work list: index it
		// (outside the script: the work list is in no event's slot).
		if err := s.rdb.SAdd(ctx, s.workList(), r.EventID).Err(); err != nil {
			return Place{}, fmt.Errorf("queue join: %w", err)
		}
	}
	return parsePlace(v)
}

// State returns the user's place in the event's queue (State QueueNone when
// not in it).
func (s *QueueStore) State(ctx context.Context, eventID, userID string, now time.Time) (Place, error) {
	v, err := s.batch.run(ctx, stateScript, s.eventKeys(eventID), userID, ms(now))
	if err != nil {
		return Place{}, fmt.Errorf("queue state: %w", err)
	}
	return parsePlace(v)
}

// StatesChunk is the most users States reads in one script run: a run
// blocks Redis for its length (a ZRANK per user), so a crowd is read in
// chunks that let other calls in between.
const StatesChunk = 500

// States returns the places of many users of one event, in the order of
// users: what State returns for each, read in one script run per
// StatesChunk users (each run atomic; the runs are pipelined).
func (s *QueueStore) States(ctx context.Context, eventID string, users []string, now time.Time) ([]Place, error) {
	out := make([]Place, 0, len(users))
	keys := s.eventKeys(eventID)
	type run struct {
		n   int
		res []any
		err error
	}
	runs := make([]run, 0, (len(users)+StatesChunk-1)/StatesChunk)
	var wg sync.WaitGroup
	for i := 0; i < len(users); i += StatesChunk {
		chunk := users[i:min(i+StatesChunk, len(users))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, ms(now))
		for _, u := range chunk {
			args = append(args, u)
		}
		runs = append(runs, run{n: len(chunk)})
		wg.Add(1)
		go func(r *run) {
			defer wg.Done()
			r.res, r.err = s.batch.run(ctx, statesScript, keys, args...)
		}(&runs[len(runs)-1])
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			return nil, fmt.Errorf("queue states: %w", r.err)
		}
		if len(r.res) != 2+2*r.n {
			return nil, errors.New("queue: unexpected script reply")
		}
		for j := range r.n {
			p, err := parsePlace([]any{r.res[2+2*j], r.res[3+2*j], r.res[0], r.res[1]})
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func parsePlace(v []any) (Place, error) {
	if len(v) != 4 && len(v) != 5 {
		return Place{}, errors.New("queue: unexpected script reply")
	}
	st, _ := v[0].(int64)
	val, _ := v[1].(int64)
	p := Place{State: QueueState(st)}
	switch p.State {
	case QueueWaiting:
		p.Position = val
	case QueueAdmitted:
		p.ExpiresAt = fromMS(val)
	}
	p.Rate = parseFloat(v[2])
	p.RateAt = fromMS(int64(parseFloat(v[3])))
	return p, nil
}

func parseFloat(v any) float64 {
	s, _ := v.(string)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// Admit runs the admission controller once for the event: it expires unused
// admissions, opens the queue when the sale starts, and admits the head of
// the queue as the token bucket (Rate, Burst) and the free part of Window
// allow. It is one atomic script: concurrent controllers never over-admit.
func (s *QueueStore) Admit(ctx context.Context, eventID string, p AdmitParams) (AdmitResult, error) {
	v, err := admitScript.Run(ctx, s.rdb, s.eventKeys(eventID), ms(p.Now), p.Rate, p.Burst,
		p.Window, p.TTL.Milliseconds(), eventID, p.Tau.Milliseconds(), p.KnownEpoch, ms(p.KnownHold)).Slice()
	if err != nil {
		return AdmitResult{}, fmt.Errorf("queue admit: %w", err)
	}
	if len(v) < 7 {
		return AdmitResult{}, errors.New("queue admit: unexpected script reply")
	}
	n, _ := v[0].(int64)
	res := AdmitResult{}
	res.Waiting, _ = v[1].(int64)
	res.Active, _ = v[2].(int64)
	maxExp, _ := v[3].(int64)
	res.MaxExpiry = fromMS(maxExp)
	res.Epoch, _ = v[4].(string)
	res.Rate = parseFloat(v[5])
	idle, _ := v[6].(int64)
	res.Idle = idle == 1
	if res.Idle {
		// The script took the event off its :listed key; take it off the
		// work list, then put it back if a join listed it again meanwhile
		// (a join adds to the work list after its script, so whichever
		// order the two run in, a listed event ends up on the list).
		if err := s.rdb.SRem(ctx, s.workList(), eventID).Err(); err != nil {
			return AdmitResult{}, fmt.Errorf("queue admit: %w", err)
		}
		again, err := s.rdb.SIsMember(ctx, s.key(eventID, "listed"), eventID).Result()
		if err != nil {
			return AdmitResult{}, fmt.Errorf("queue admit: %w", err)
		}
		if again {
			if err := s.rdb.SAdd(ctx, s.workList(), eventID).Err(); err != nil {
				return AdmitResult{}, fmt.Errorf("queue admit: %w", err)
			}
			res.Idle = false
		}
	}
	for i := 0; i < int(n) && 8+2*i < len(v); i++ {
		u, _ := v[7+2*i].(string)
		res.Admitted = append(res.Admitted, u)
		jt, _ := v[8+2*i].(string)
		t, _ := strconv.ParseInt(jt, 10, 64)
		res.JoinedAt = append(res.JoinedAt, fromMS(t))
	}
	return res, nil
}

// Events lists the events with queue activity.
func (s *QueueStore) Events(ctx context.Context) ([]string, error) {
	return s.rdb.SMembers(ctx, s.workList()).Result()
}

// releaseAdmissionScript removes the user's admission if it expires by ARGV[2] (unix
// ms): the admission a confirmed order was made under, not a newer one. It
// counts the completed checkout in the meta hash ('done', read by the
// adaptive controller), unless the queue was ended. KEYS: adm, meta.
var releaseAdmissionScript = redis.NewScript(`
local e = redis.call('ZSCORE', KEYS[1], ARGV[1])
if e and tonumber(e) <= tonumber(ARGV[2]) then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], 'done', 1) end
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0`)

// Release frees the user's admission slot at once (order confirmed), if it
// expires by expiringBy: an admission issued later (the user's first one
// expired, they queued again) is left alone. It reports whether it freed
// one.
func (s *QueueStore) Release(ctx context.Context, eventID, userID string, expiringBy time.Time) (bool, error) {
	n, err := releaseAdmissionScript.Run(ctx, s.rdb, []string{s.key(eventID, "adm"), s.key(eventID, "meta")}, userID, ms(expiringBy)).Int()
	if err != nil {
		return false, fmt.Errorf("queue release: %w", err)
	}
	return n > 0, nil
}

// Leave removes the user from the event's queue, pre-queue and admissions.
// It reports whether the user was in any of them.
func (s *QueueStore) Leave(ctx context.Context, eventID, userID string) (bool, error) {
	var cmds [4]*redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cmds[0] = p.ZRem(ctx, s.key(eventID, "q"), userID)
		cmds[1] = p.ZRem(ctx, s.key(eventID, "pre"), userID)
		cmds[2] = p.ZRem(ctx, s.key(eventID, "adm"), userID)
		cmds[3] = p.ZRem(ctx, s.key(eventID, "exp"), userID)
		p.HDel(ctx, s.key(eventID, "jt"), userID)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("queue leave: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n > 0, nil
}

// End deletes the event's queue (places, admissions, expiries, meta): the
// next admission pass finds nothing and takes the event off the work list.
func (s *QueueStore) End(ctx context.Context, eventID string) error {
	if err := s.rdb.Del(ctx, s.eventKeys(eventID)...).Err(); err != nil {
		return fmt.Errorf("queue end: %w", err)
	}
	return nil
}

// Active counts the event's admitted users whose admission has not expired.
func (s *QueueStore) Active(ctx context.Context, eventID string, now time.Time) (int64, error) {
	return s.rdb.ZCount(ctx, s.key(eventID, "adm"), "("+strconv.FormatInt(ms(now), 10), "+inf").Result()
}

// Publish announces that the event's queue moved (best effort), on the
// event's own sharded channel (SPUBLISH: on Redis Cluster only the node of
// the event's slot and its subscribers see it).
func (s *QueueStore) Publish(ctx context.Context, eventID string) error {
	return s.rdb.SPublish(ctx, s.Channel(eventID), "1").Err()
}

// Subscribe listens to the event's queue movements; the caller closes the
// PubSub.
func (s *QueueStore) Subscribe(ctx context.Context, eventID string) *redis.PubSub {
	return s.rdb.SSubscribe(ctx, s.Channel(eventID))
}

// ShardSubscribers counts the subscribers of the event's channel (PUBSUB
// SHARDNUMSUB, on the node of the event's slot).
func (s *QueueStore) ShardSubscribers(ctx context.Context, eventID string) (int64, error) {
	m, err := s.rdb.PubSubShardNumSub(ctx, s.Channel(eventID)).Result()
	return m[s.Channel(eventID)], err
}

// RateDecision is what one controller's measurements say about an event's
// admission rate.
type RateDecision int

// The decisions of the adaptive admission controller.
const (
	RateHold     RateDecision = 0
	RateDecrease RateDecision = -1
	RateIncrease RateDecision = 1
)

// RateParams are one controller's view for AdjustRate.
type RateParams struct {
	Now      time.Time
	Interval time.Duration // at most one change per interval, whichever instance makes it
	Ceiling  float64
	Floor    float64
	Initial  float64
	Step     float64 // additive increase
	Factor   float64 // multiplicative decrease
	// DecreaseGap is the least time between two decreases (0: Interval).
	DecreaseGap time.Duration
	// Completed is the fraction of the measured completion rate (checkouts
	// whose admission was released by a confirmed order, per second, an
	// EWMA over CompletedTau, every instance's) below which a decrease does
	// not take the rate (0: no such floor). Backing off below what checkout
	// completes only starves it when the pressure comes from elsewhere
	// (fans waiting, browsing); when checkout itself slows, its completions
	// fall and the floor with them.
	Completed    float64
	CompletedTau time.Duration
	Decision     RateDecision
	Reason       string
}

// RateState is the shared rate after AdjustRate: the rate, the reason of
// its last change and the measured completion rate (per second).
type RateState struct {
	Rate, Completions float64
	Reason            string
}

// adjustRateScript keeps the event's adaptive admission rate in its meta
// hash (crate, cts, creason): shared by every instance, changed at most once
// per interval (so N instances do not multiply the steps). KEYS: meta.
// ARGV: now, interval ms, ceiling, floor, initial, step, factor, decision,
// reason, completed fraction, completed tau ms, decrease gap ms (the last
// decrease's time is cdec). The completion rate (drate)
// is measured from the 'done' counter (Release) at most once a second:
// done/dts are the count and time of the last measurement.
var adjustRateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {ARGV[5], '', '0'} end
local now = tonumber(ARGV[1])
local ceil, floor = tonumber(ARGV[3]), tonumber(ARGV[4])
local m = redis.call('HMGET', KEYS[1], 'crate', 'creason', 'cts', 'done', 'dprev', 'dts', 'drate', 'cdec')
local r = tonumber(m[1] or ARGV[5])
local reason = m[2] or 'start'
local ts = tonumber(m[3] or '0')
local done, dprev, dts = tonumber(m[4] or '0'), tonumber(m[5] or '-1'), tonumber(m[6] or '0')
local drate = tonumber(m[7] or '0')
if dprev < 0 or done < dprev then
  redis.call('HSET', KEYS[1], 'dprev', done, 'dts', now)
elseif now - dts >= 1000 then
  local a = 1 - math.exp(-(now - dts) / tonumber(ARGV[11]))
  drate = drate + a * ((done - dprev) * 1000 / (now - dts) - drate)
  redis.call('HSET', KEYS[1], 'dprev', done, 'dts', now, 'drate', tostring(drate))
end
local d = tonumber(ARGV[8])
if d < 0 and now - tonumber(m[8] or '0') < tonumber(ARGV[12]) then d = 0 end
if d ~= 0 and now - ts >= tonumber(ARGV[2]) then
  reason = ARGV[9]
  if d < 0 then
    r = r * tonumber(ARGV[7])
    local least = drate * tonumber(ARGV[10])
    if r < least then r, reason = least, 'completions' end
    redis.call('HSET', KEYS[1], 'cdec', now)
  else
    r = r + tonumber(ARGV[6])
  end
  redis.call('HSET', KEYS[1], 'cts', now)
end
r = math.max(floor, math.min(ceil, r))
redis.call('HSET', KEYS[1], 'crate', tostring(r), 'creason', reason)
return {tostring(r), reason, tostring(drate)}
`)

// AdjustRate applies the controller's decision to the event's shared
// admission rate (at most one change per interval across instances) and
// returns the rate, the reason of its last change and the completion rate.
func (s *QueueStore) AdjustRate(ctx context.Context, eventID string, p RateParams) (RateState, error) {
	tau := p.CompletedTau
	if tau <= 0 {
		tau = 10 * time.Second
	}
	gap := p.DecreaseGap
	if gap <= 0 {
		gap = p.Interval
	}
	v, err := adjustRateScript.Run(ctx, s.rdb, []string{s.key(eventID, "meta")}, ms(p.Now), p.Interval.Milliseconds(),
		p.Ceiling, p.Floor, p.Initial, p.Step, p.Factor, int(p.Decision), p.Reason, p.Completed, tau.Milliseconds(),
		gap.Milliseconds()).Slice()
	if err != nil {
		return RateState{}, fmt.Errorf("queue rate: %w", err)
	}
	if len(v) != 3 {
		return RateState{}, errors.New("queue rate: unexpected script reply")
	}
	reason, _ := v[1].(string)
	return RateState{Rate: parseFloat(v[0]), Reason: reason, Completions: parseFloat(v[2])}, nil
}
