package app

import (
	"context"
	"time"
)

// warmWorkers is how many seat maps Warm loads at a time.
const warmWorkers = 4

// Warm loads, before the instance takes traffic (`ticketing serve` calls
// it before it listens), what the first page of each of the events most
// likely browsed would otherwise load from Postgres: the catalog's rows
// (catalog.Service.Warm) and the live seat map's projection
// (seatmap.Service.Warm), for up to WARMUP_EVENTS events (those on sale
// first, then the soonest: store.WarmEventIDs), within WARMUP_TIMEOUT. A
// cold instance that joins a busy pool (a deploy, a scale-out in a sale)
// then answers those pages from memory from its first request, instead of
// loading thousands of maps at once while its pools open their
// connections. What it has not loaded by the deadline is loaded by its
// first view, as without a warm-up. It returns how many events' seat maps
// it loaded.
func (a *App) Warm(ctx context.Context) int {
	if a.Cfg.WarmupEvents <= 0 {
		return 0
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, a.Cfg.WarmupTimeout)
	defer cancel()
	ids, err := a.Store.WarmEventIDs(ctx, a.Now(), a.Cfg.WarmupEvents)
	if err != nil {
		a.Log.Warn("warm-up: cannot list the events", "err", err)
		return 0
	}
	if err := a.Catalog.Warm(ctx, ids); err != nil {
		a.Log.Warn("warm-up: catalog", "err", err)
	}
	maps := a.SeatMap.Warm(ctx, ids, warmWorkers)
	a.Log.Info("warm-up done", "events", len(ids), "seat_maps", maps,
		"took_ms", time.Since(start).Milliseconds(), "timed_out", ctx.Err() != nil)
	return maps
}
