package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Notifier wakes the relays of every instance (LISTEN outbox) after commits
// that wrote outbox rows. It replaces a NOTIFY inside the business
// transaction: Postgres serialises the commits of all transactions that
// issued NOTIFY on a global lock, which capped every write path (holds,
// orders) at the rate of one commit at a time. Here the NOTIFY runs in its own
// tiny transaction after the business commit, and kicks that arrive while one
// is in flight are coalesced into the next, so relays still wake within a
// round trip and polling stays only a safety net.
//
// The NOTIFY goes over a connection of its own, opened with the pool's
// settings: on the shared pool it queued behind the very transactions it
// announces (a storm of holds keeps every connection busy), and the relays
// fell back to their once-a-second poll.
//
// Two notifications are at least Interval apart: the kicks of the commits
// in between are coalesced into the second. Under a storm of holds a
// NOTIFY per commit or two was a transaction of its own for every other
// hold (bench/holds: 1.5 transactions per hold), and a wake-up of every
// relay partition each time; the relays batch a partition's drains
// BatchInterval (50ms) apart anyway.
type Notifier struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	kick chan struct{}
	// Interval is the shortest time between two notifications (default
	// DefaultNotifyInterval; set it before Run).
	Interval time.Duration
}

// DefaultNotifyInterval is Notifier.Interval by default.
const DefaultNotifyInterval = 20 * time.Millisecond

// NewNotifier returns a notifier over pool; call Run to start it.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{pool: pool, log: log, kick: make(chan struct{}, 1), Interval: DefaultNotifyInterval}
}

// Kick asks for a notification; it never blocks. Use it as the store's
// outbox hook (store.SetOutboxHook).
func (n *Notifier) Kick() {
	select {
	case n.kick <- struct{}{}:
	default: // one is already pending: it covers this commit too
	}
}

const sqlNotify = `SELECT pg_notify('outbox', '')`

// Run sends the notifications until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		sent := time.Now()
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		if conn == nil {
			var err error
			if conn, err = pgx.ConnectConfig(c, n.pool.Config().ConnConfig.Copy()); err != nil {
				conn = nil
			}
		}
		var err error
		if conn != nil {
			if _, err = conn.Exec(c, sqlNotify); err != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
				conn = nil
			}
		}
		if conn == nil {
			// No connection of its own right now: the pool, and a new
			// connection at the next kick.
			_, err = n.pool.Exec(c, sqlNotify)
		}
		if err != nil && ctx.Err() == nil {
			// The relays' polling picks the rows up anyway.
			n.log.Warn("outbox notify", "err", err)
		}
		cancel()
		if wait := n.Interval - time.Since(sent); wait > 0 {
			pause.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-pause.C:
			}
		}
	}
}
