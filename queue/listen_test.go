package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUpdatesWokenByAnotherInstance: an admission on one instance wakes
// the streams open on another through the event's sharded channel (with
// refreshes an hour apart, nothing else could), and the instance's
// subscription to the channel lasts exactly as long as its streams.
func TestUpdatesWokenByAnotherInstance(t *testing.T) {
	f := newFixture(t, -time.Hour)
	cfg := Config{AdmitRate: 1000, AdmitBurst: 1, Window: 100, Refresh: time.Hour}
	here := f.service(t, cfg, nil)
	there := f.service(t, cfg, nil)
	ctx := context.Background()
	_, err := here.Join(ctx, f.event, "ahead", "")
	require.NoError(t, err)
	_, err = here.Join(ctx, f.event, "me", "")
	require.NoError(t, err)

	sctx, cancel := context.WithCancel(ctx)
	stream, err := here.Updates(sctx, f.event, "me")
	require.NoError(t, err)
	first := <-stream
	require.Equal(t, 2, first.Position)
	listeners := func() int {
		here.listenMu.Lock()
		defer here.listenMu.Unlock()
		return len(here.listeners)
	}
	require.Equal(t, 1, listeners(), "one subscription for the event's streams")

	// The subscription is asynchronous: admit once it is in place, as
	// Redis sees it (PUBSUB SHARDNUMSUB on the channel's node).
	require.Eventually(t, func() bool {
		n, err := here.store.ShardSubscribers(ctx, f.event)
		return err == nil && n > 0
	}, 10*time.Second, 10*time.Millisecond)
	f.clk.Add(time.Second)
	got, err := there.AdmitEvent(ctx, f.event) // admits "ahead" (burst 1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	select {
	case tk := <-stream:
		require.Equal(t, 1, tk.Position, "moved up by the other instance's admission")
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was not woken by the other instance's admission")
	}

	cancel()
	require.Eventually(t, func() bool { return listeners() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the subscription outlived the event's last stream")
}
