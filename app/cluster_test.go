package app_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
)

const clusterSecret = "cluster-secret-0123456789abcdef"

// clusterLoad is buyers holding and cancelling seats of one event and fans
// joining the queue of another, through GraphQL, counting the answers'
// error codes by phase.
type clusterLoad struct {
	t            *testing.T
	base         string
	seats, queue fixtures.Event
	phase        atomic.Value // string
	mu           sync.Mutex
	codes        map[string]map[string]int // phase -> code ("" for success) -> count
	stop         chan struct{}
	wg           sync.WaitGroup
}

func (l *clusterLoad) record(op, code string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.phase.Load().(string)
	if l.codes[p] == nil {
		l.codes[p] = map[string]int{}
	}
	l.codes[p][op+":"+code]++
}

func (l *clusterLoad) token(sub string) string {
	tok, err := auth.Mint(clusterSecret, "ticketing-dev", "ticketing", sub, nil, time.Hour)
	require.NoError(l.t, err)
	return tok
}

func (l *clusterLoad) run(holders, joiners int) {
	for w := range holders {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tok := l.token(fmt.Sprintf("cluster-holder-%d-%s", w, uuid.NewString()[:6]))
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				var h struct{ CreateHold struct{ ID string } }
				errs := apptest.GraphQL(l.t, l.base, tok,
					`mutation($e: ID!, $s: [ID!], $k: String!) { createHold(input: {eventId: $e, seatIds: $s, idempotencyKey: $k}) { id } }`,
					map[string]any{"e": l.seats.ID, "s": []string{l.seats.Seats[rng.IntN(len(l.seats.Seats))]},
						"k": fmt.Sprintf("w%d-%d", w, i)}, &h)
				l.record("hold", errCode(errs))
				if len(errs) == 0 {
					errs = apptest.GraphQL(l.t, l.base, tok, `mutation($id: ID!) { cancelHold(id: $id) { id } }`,
						map[string]any{"id": h.CreateHold.ID}, nil)
					l.record("cancel", errCode(errs))
				}
			}
		}()
	}
	for w := range joiners {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				tok := l.token(fmt.Sprintf("cluster-fan-%d-%d-%s", w, i, uuid.NewString()[:6]))
				errs := apptest.GraphQL(l.t, l.base, tok, `mutation($e: ID!) { joinQueue(eventId: $e) { status } }`,
					map[string]any{"e": l.queue.ID}, nil)
				l.record("join", errCode(errs))
				if len(errs) == 0 {
					errs = apptest.GraphQL(l.t, l.base, tok, `query($e: ID!) { queueTicket(eventId: $e) { status position } }`,
						map[string]any{"e": l.queue.ID}, nil)
					l.record("ticket", errCode(errs))
				}
			}
		}()
	}
}

// TestRedisClusterSurvivesSlotMigrationAndFailover runs the App on a
// private Redis Cluster of three primaries, each with a replica. While
// buyers hold and cancel seats of one event and fans join the queue of
// another (through GraphQL), (1) the hash slot of each event ({eventId},
// every key of the event) moves to another primary key by key, as
// redis-cli --cluster reshard does, and (2) the primary then serving the
// seated event is killed (-9) and its replica takes over.
//
// A migration is invisible: every request answers as it would without
// one. A failover is survived like a Redis outage: requests may answer
// SERVICE_UNAVAILABLE while the cluster has no primary for the slot (never
// INTERNAL, never a wrong answer; holds are decided by Postgres all along),
// and once the replica is promoted, holds and joins work again.
func TestRedisClusterSurvivesSlotMigrationAndFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node Redis Cluster")
	}
	cl := testdb.StartOwnCluster(t, 3)
	a := apptest.New(t, map[string]string{
		"REDIS_CLUSTER_ADDRS": strings.Join(cl.Primaries, ","),
		"JWT_HS256_SECRET":    clusterSecret,
		"ABUSE_LIMITS":        "off",
	})
	l := &clusterLoad{t: t, base: apptest.Serve(t, a).URL, codes: map[string]map[string]int{}, stop: make(chan struct{}),
		seats: fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Name: "Cluster Seats", Seats: 100}),
		queue: fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Name: "Cluster Queue", Queued: true}),
	}
	l.phase.Store("before")
	l.run(4, 4)
	defer func() {
		select {
		case <-l.stop:
		default:
			close(l.stop)
		}
		l.wg.Wait()
	}()
	time.Sleep(time.Second)

	// (1) Both events' slots move to another primary, key by key.
	l.phase.Store("migration")
	seatSlot, queueSlot := cl.Slot(t, "{"+l.seats.ID+"}"), cl.Slot(t, "{"+l.queue.ID+"}")
	for _, slot := range []int{seatSlot, queueSlot} {
		from := cl.Owner(t, slot)
		to := cl.OtherPrimary(t, from)
		cl.MoveSlot(t, slot, to)
		require.Equal(t, to, cl.Owner(t, slot), "slot %d moved", slot)
		cl.WaitAgree(t, slot, to)
		time.Sleep(500 * time.Millisecond)
	}
	l.phase.Store("after migration")
	time.Sleep(time.Second)

	// (2) The primary now serving the seated event dies; its replica
	// takes over once the others agree it failed.
	l.phase.Store("failover")
	dead := cl.Owner(t, seatSlot)
	replica := cl.Replica(t, dead)
	cl.Kill(dead)
	if !cl.Promote(t, seatSlot, replica, 20*time.Second) {
		t.Log("the replica was promoted by hand (CLUSTER FAILOVER TAKEOVER)")
	}
	cl.WaitOK(t, 30*time.Second)
	// The App's cluster client re-reads the slot map each second
	// (app.NewRedis): past that, it knows the new primary.
	time.Sleep(2 * time.Second)
	l.phase.Store("after failover")
	// Holds and joins work again within a bounded time.
	recovered := assert.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		c := l.codes["after failover"]
		return c["hold:"] > 0 && c["join:"] > 0 && c["ticket:"] > 0
	}, 30*time.Second, 100*time.Millisecond, "holds and joins did not recover after the failover")
	time.Sleep(time.Second)
	l.phase.Store("end")
	close(l.stop)
	l.wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range []string{"before", "migration", "after migration", "failover", "after failover"} {
		t.Logf("%-16s %v", p, l.codes[p])
	}
	if !recovered {
		t.Logf("slots: seats %d queue %d; dead %s", seatSlot, queueSlot, dead.Addr())
		for _, n := range cl.Nodes {
			if n.Running() {
				v, _ := n.Do(t, "CLUSTER", "NODES")
				t.Logf("%s sees:\n%v", n.Addr(), v)
			}
		}
	}
	require.True(t, recovered)
	// Buyers race for seats; every fan joins from one address.
	allowed := map[string]bool{"": true, "SEAT_UNAVAILABLE": true, "RATE_LIMITED": true}
	for p, codes := range l.codes {
		for k, n := range codes {
			_, code, _ := strings.Cut(k, ":")
			if allowed[code] {
				continue
			}
			// Only a failover may cost answers, and only as the outage code.
			if code == "SERVICE_UNAVAILABLE" && p == "failover" {
				continue
			}
			t.Errorf("phase %q: %d answers %s", p, n, k)
		}
	}
	for _, p := range []string{"migration", "after migration", "after failover"} {
		require.Positive(t, l.codes[p]["hold:"], "holds succeeded during %s", p)
		require.Positive(t, l.codes[p]["join:"], "joins succeeded during %s", p)
	}
	// No seat is held twice: Postgres decided every hold.
	var doubled int
	require.NoError(t, a.Pool.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT seat_id FROM hold_items hi JOIN holds h ON h.id = hi.hold_id
		WHERE h.status = 'ACTIVE' AND hi.seat_id IS NOT NULL GROUP BY seat_id HAVING count(*) > 1) d`).Scan(&doubled))
	require.Zero(t, doubled)
}
