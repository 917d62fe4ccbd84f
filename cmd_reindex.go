package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/store"
)

// cmdReindex rebuilds the search projection from Postgres. Elasticsearch:
// a new index is filled and the alias swapped to it, with no downtime.
// Embedded: the index under SEARCH_DIR is rebuilt from scratch; it is
// locked by a running `ticketing serve`, which rebuilds a missing index at
// start and catches up a stale one by itself.
func cmdReindex(ctx context.Context, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	pool, err := app.OpenPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	engine, _, cleanup, err := app.OpenSearchEngine(ctx, cfg.SearchBackend, app.SearchDir(cfg), cfg.ElasticsearchURL, true)
	if errors.Is(err, search.ErrIndexLocked) {
		return fmt.Errorf("%w: stop `ticketing serve` first (it rebuilds a missing index at start)", err)
	}
	if err != nil {
		return err
	}
	defer cleanup()
	defer engine.Close()
	start := time.Now()
	n, err := search.NewService(engine, store.New(pool), log).Rebuild(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reindexed %d events (%s) in %s\n", n, cfg.SearchBackend, time.Since(start).Round(time.Millisecond))
	return nil
}
