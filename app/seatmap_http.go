package app

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/seatmap"
	"github.com/ticketing/ticketing/transport/wsgorilla"
)

// initSeatMap builds the live seat map service (Redis fan-out, snapshot
// cache) with the Origin allow-list of the WebSocket transport. prefix is
// for tests sharing one Redis.
func (a *App) initSeatMap(prefix string) {
	if a.SeatMap != nil {
		_ = a.SeatMap.Close()
	}
	a.SeatMap = seatmap.New(a.Redis, a.Store, seatmap.Config{
		Prefix:      prefix,
		CheckOrigin: wsgorilla.OriginChecker(a.allowedOrigins()...),
		Busy:        wsgorilla.Busy,
		Coalesce:    a.Cfg.SeatMapCoalesce,
		Reads:       a.Reads,
		Registerer:  a.Metrics,
		Log:         a.Log,
	})
	a.Catalog.UseLiveCounts(liveCounts{a.SeatMap})
}

// liveCounts gives the catalog an event's availability off its live seat
// map (catalog.LiveCounts).
type liveCounts struct{ m *seatmap.Service }

func (l liveCounts) Counts(ctx context.Context, eventID string) (catalog.Availability, bool, error) {
	c, ok, err := l.m.Counts(ctx, eventID)
	return availability(eventID, c), ok, err
}

func (l liveCounts) CachedCounts(eventID string) (catalog.Availability, bool) {
	c, ok := l.m.CachedCounts(eventID)
	return availability(eventID, c), ok
}

func availability(eventID string, c seatmap.Counts) catalog.Availability {
	return catalog.Availability{EventID: eventID, Available: c.Available, Held: c.Held, Sold: c.Sold, Capacity: c.Capacity}
}

// runRelay publishes the outbox to the seat map until ctx ends, and feeds
// a.Projections (the search projection) through search_pending: the relay's
// batch only records the events that changed (outbox.PendingSink) and a
// search.PendingIndexer, woken after each batch (at most one round per
// searchIndexInterval), hands them to the
// projections apart from the relay, so a slow index never delays the seat
// map. Any number of instances may run it.
func (a *App) runRelay(ctx context.Context) {
	sinks := []outbox.Sink{a.SeatMap}
	if len(a.Projections) > 0 {
		idx := search.NewPendingIndexer(a.Store, a.applyProjections, a.Log)
		// A round rebuilds each pending event's document from Postgres.
		// Only catalog changes make an event pending (documents hold no
		// inventory); search may be stale: at most once a second.
		idx.Interval = searchIndexInterval
		sinks = append(sinks, outbox.PendingSink(a.Store, idx.Wake))
		done := make(chan struct{})
		go func() { defer close(done); idx.Run(ctx) }()
		defer func() { <-done }()
	}
	// The relay holds one transaction per partition while its sinks publish,
	// and the sinks read Postgres too (GA recounts, search documents): on
	// one shared pool, busy partitions could take every connection and wait
	// forever for the sinks. The relay therefore gets a pool of its own:
	// one connection per partition plus one for LISTEN.
	cfg := outbox.Config{Registerer: a.Metrics, Log: a.Log}
	pcfg, err := pgxpool.ParseConfig(a.Cfg.DatabaseURL)
	if err != nil {
		a.Log.Error("outbox relay", "err", err)
		return
	}
	cfg.Partitions = outbox.DefaultPartitions
	pcfg.MaxConns = int32(cfg.Partitions + 1)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		a.Log.Error("outbox relay", "err", err)
		return
	}
	defer pool.Close()
	r := outbox.New(pool, cfg, sinks...)
	if err := a.SeatMap.AnnounceFeed(ctx); err != nil {
		// The seat map's projections read their streams until a batch
		// of this relay writes the feed.
		a.Log.Warn("seat map change feed", "err", err)
	}
	_ = r.Run(ctx)
}

// applyProjections passes changed events to a.Projections as the rows they
// read (ProjectorSink and the search follower need only the event ids).
func (a *App) applyProjections(ctx context.Context, eventIDs []string) error {
	rows := make([]outbox.Row, len(eventIDs))
	for i := range eventIDs {
		rows[i] = outbox.Row{EventID: &eventIDs[i], Topic: outbox.TopicCatalog}
	}
	for _, p := range a.Projections {
		if err := p.Publish(ctx, rows); err != nil {
			return err
		}
	}
	return nil
}

// mountSeatMap serves GET /api/events/{eventId}/seatmap/stream (SSE; the
// event id is the cursor, Last-Event-ID resumes).
// searchIndexInterval is the shortest time between two rounds of the
// search indexer (search.PendingIndexer.Interval; its own default is 250ms).
const searchIndexInterval = time.Second

func (a *App) mountSeatMap(mux *http.ServeMux) {
	mux.Handle("GET /api/events/{eventId}/seatmap/stream", a.SeatMap)
}
