package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/search"
)

// initSearch opens the engine of SEARCH_BACKEND, registers its metrics,
// readiness check and outbox projection, and brings it up to date with
// Postgres in the background (a full rebuild when the index is new, else a
// catch-up), then keeps following the other instances' changes
// (searchFollower). If the engine cannot be opened, searchEvents answers
// SERVICE_UNAVAILABLE and everything else works.
func (a *App) initSearch() {
	engine, fresh, cleanup, err := OpenSearchEngine(context.Background(), a.Cfg.SearchBackend, SearchDir(a.Cfg), a.Cfg.ElasticsearchURL, false)
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
	f := &searchFollower{svc: a.Search, rdb: a.Redis, log: a.Log, self: uuid.NewString(), forget: a.Catalog.ForgetEvents,
		channel: "ticketing:search:changes:" + filepath.Base(SearchDir(a.Cfg)), catchUpEvery: time.Minute}
	a.Projections = append(a.Projections, f.sink())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx, fresh)
	}()
	a.searchStop = func() {
		cancel()
		<-done
		_ = engine.Close()
		cleanup()
	}
}

// searchFollower keeps this instance's index converging with Postgres
// when several API instances run: the outbox relay hands each change to one
// instance only, so that instance applies it and announces the event ids on
// Redis pub/sub; every other instance applies them too (batched every
// 250 ms). Pub/sub may lose messages (reconnects), so every instance also
// runs a version catch-up every catchUpEvery. Apply is idempotent by
// version, so duplicates are harmless.
type searchFollower struct {
	svc     *search.Service
	rdb     redis.UniversalClient
	log     *slog.Logger
	self    string // this instance, to skip its own announcements
	channel string
	// forget drops the changed events' rows this instance keeps in memory
	// (catalog.Service.ForgetEvents), before the index reads them again.
	forget       func(eventIDs ...string)
	catchUpEvery time.Duration
}

type searchChange struct {
	From string   `json:"from"`
	IDs  []string `json:"ids"`
}

// sink is the outbox sink: apply, then announce to the other instances.
func (f *searchFollower) sink() outbox.Sink {
	apply := outbox.ProjectorSink(f.svc)
	return outbox.SinkFunc(func(ctx context.Context, rows []outbox.Row) error {
		ids := outbox.EventIDs(rows, outbox.TopicCatalog) // what apply reindexes
		f.forget(ids...)
		if err := apply.Publish(ctx, rows); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		msg, _ := json.Marshal(searchChange{From: f.self, IDs: ids})
		if err := f.rdb.Publish(ctx, f.channel, msg).Err(); err != nil {
			f.log.Warn("search: announce change", "err", err) // the others catch up later
		}
		return nil
	})
}

// run subscribes, brings the index up to date (Start), then applies the
// other instances' changes and catches up periodically until ctx ends.
func (f *searchFollower) run(ctx context.Context, fresh bool) {
	ps := f.rdb.Subscribe(ctx, f.channel)
	defer ps.Close()
	msgs := ps.Channel()
	start := time.Now()
	if err := f.svc.Start(ctx, fresh); err != nil {
		if ctx.Err() == nil {
			f.log.Error("search start-up", "err", err, "after", time.Since(start).String())
		}
		return
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	catchUp := time.NewTicker(f.catchUpEvery)
	defer catchUp.Stop()
	pending := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			var c searchChange
			if json.Unmarshal([]byte(m.Payload), &c) == nil && c.From != f.self {
				f.forget(c.IDs...)
				for _, id := range c.IDs {
					pending[id] = true
				}
			}
		case <-tick.C:
			if len(pending) == 0 {
				continue
			}
			ids := make([]string, 0, len(pending))
			for id := range pending {
				ids = append(ids, id)
			}
			clear(pending)
			if err := f.svc.Apply(ctx, ids); err != nil && ctx.Err() == nil {
				f.log.Warn("search: apply announced changes", "err", err) // the catch-up retries
			}
		case <-catchUp.C:
			if _, err := f.svc.CatchUp(ctx); err != nil && ctx.Err() == nil {
				f.log.Warn("search: periodic catch-up", "err", err)
			}
		}
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
