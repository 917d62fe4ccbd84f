package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/redisstore"
)

func TestLeases(t *testing.T) {
	t.Parallel()
	rdb := testdb.NewRedis(t)
	l := redisstore.NewLeases(rdb, testdb.RedisPrefix(t))
	ctx := context.Background()
	ev := "ev1"

	cur, err := l.Acquire(ctx, ev, []string{"s1", "s2"}, "h1:alice:1", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []string{"", ""}, cur)
	cur, err = l.Acquire(ctx, ev, []string{"s2", "s3"}, "h2:bob:2", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []string{"h1:alice:1", ""}, cur, "NX: s2 stays alice's")

	// Compare-and-delete: h2 cannot release alice's s2.
	require.NoError(t, l.Release(ctx, ev, []string{"s2", "s3"}, "h2"))
	v, err := rdb.Get(ctx, l.Key(ev, "s2")).Result()
	require.NoError(t, err)
	assert.Equal(t, "h1:alice:1", v)
	assert.Zero(t, rdb.Exists(ctx, l.Key(ev, "s3")).Val())
	// Nor can a hold id that is a prefix of another.
	require.NoError(t, l.Release(ctx, ev, []string{"s1"}, "h"))
	assert.Equal(t, int64(1), rdb.Exists(ctx, l.Key(ev, "s1")).Val())

	// Set overwrites with an absolute expiry.
	at := time.Now().Add(1500 * time.Millisecond)
	require.NoError(t, l.Set(ctx, ev, []string{"s1"}, "h3:carol:3", at))
	pttl := rdb.PTTL(ctx, l.Key(ev, "s1")).Val()
	assert.InDelta(t, 1500, pttl.Milliseconds(), 200)
	require.NoError(t, l.Release(ctx, ev, []string{"s1", "s2"}, "h3"))
	assert.Zero(t, rdb.Exists(ctx, l.Key(ev, "s1")).Val())
	assert.Equal(t, int64(1), rdb.Exists(ctx, l.Key(ev, "s2")).Val())
	require.NoError(t, l.Ping(ctx))
}
