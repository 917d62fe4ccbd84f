package app

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/search"
)

// initSearch opens the engine of SEARCH_BACKEND, registers its metrics,
// readiness check and outbox projection, and brings it up to date with
// Postgres in the background (a full rebuild when the index is new, else a
// catch-up). If the engine cannot be opened, searchEvents answers
// SERVICE_UNAVAILABLE and everything else works.
func (a *App) initSearch() {
	engine, fresh, cleanup, err := OpenSearchEngine(context.Background(), a.Cfg.SearchBackend, searchDir(a.Cfg), a.Cfg.ElasticsearchURL, false)
	if err != nil {
		a.Log.Error("search unavailable", "err", err)
		a.AddReadinessCheck("search", func(context.Context) error { return err }, false)
		return
	}
	a.Search = search.NewService(engine, a.Store, a.Log)
	a.Search.Now = a.Now
	if err := a.Search.RegisterMetrics(a.Metrics); err != nil {
		a.Log.Warn("search metrics", "err", err)
	}
	a.AddReadinessCheck("search", a.Search.Ready, false)
	a.Projections = append(a.Projections, outbox.ProjectorSink(a.Search))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		if err := a.Search.Start(ctx, fresh); err != nil && ctx.Err() == nil {
			a.Log.Error("search start-up", "err", err, "after", time.Since(start).String())
		}
	}()
	a.searchStop = func() {
		cancel()
		<-done
		_ = engine.Close()
		cleanup()
	}
}

// SearchDir is where the embedded index of cfg's database lives:
// SEARCH_DIR/<database name>.
func SearchDir(cfg config.Config) string {
	db := "ticketing"
	if u, err := url.Parse(cfg.DatabaseURL); err == nil && strings.Trim(u.Path, "/") != "" {
		db = strings.Trim(u.Path, "/")
	}
	return filepath.Join(cfg.SearchDir, db)
}

// searchDir is SearchDir, except under `go test` with the default
// SEARCH_DIR: then "" (a temporary directory), so tests never share or lock
// an index nor leave one in the source tree.
func searchDir(cfg config.Config) string {
	if testing.Testing() && cfg.SearchDir == "./data/search" {
		return ""
	}
	return SearchDir(cfg)
}

// OpenSearchEngine opens the engine of backend ("embedded" under dir, or
// "elasticsearch" at esURL); fresh reports an index that needs a full
// rebuild, reset forces one. An empty dir means a temporary directory that
// cleanup removes.
func OpenSearchEngine(ctx context.Context, backend, dir, esURL string, reset bool) (engine search.Engine, fresh bool, cleanup func(), err error) {
	cleanup = func() {}
	switch backend {
	case "elasticsearch":
		e, fresh, err := search.OpenElastic(ctx, esURL, "events")
		if err != nil {
			return nil, false, cleanup, err
		}
		return e, fresh || reset, cleanup, nil
	default:
		if dir == "" {
			if dir, err = os.MkdirTemp("", "ticketing-search-"); err != nil {
				return nil, false, cleanup, fmt.Errorf("search: %w", err)
			}
			tmp := dir
			cleanup = func() { _ = os.RemoveAll(tmp) }
		}
		b, err := search.OpenBleve(dir, reset)
		if err != nil {
			cleanup()
			return nil, false, func() {}, err
		}
		return b, b.Fresh, cleanup, nil
	}
}
