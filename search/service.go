package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/store"
)

// Projector keeps the index in step with Postgres. The outbox relay calls
// Apply with the event ids of 'catalog' rows (payload {"eventId","version"})
// and of 'inventory' rows (approximate availability). Apply reloads those
// events from Postgres and upserts them idempotently: an older version never
// overwrites a newer one, and an event gone from Postgres is deleted. It is
// safe to call concurrently, repeatedly and out of order.
type Projector interface {
	Apply(ctx context.Context, eventIDs []string) error
}

// Service is the search use cases over an Engine: queries (with defaults,
// timeouts and the SERVICE_UNAVAILABLE mapping) and the projection.
type Service struct {
	Engine Engine
	Store  *store.Store
	Log    *slog.Logger
	Now    func() time.Time
	// Timeout bounds one query (default 2 s).
	Timeout time.Duration
	// CacheTTL is how long the result of a search is reused for the same
	// search (default 1 s; negative: never). Search may lag by design.
	CacheTTL time.Duration
	// Catalog loads the events of a page of hits (Events); app sets it to
	// the catalog service's EventsByIDs.
	Catalog EventLoader

	ready     atomic.Bool
	metrics   *metrics
	cacheOnce sync.Once
	cache     *ttlCache[Result]
	pagesOnce sync.Once
	pages     *Cache[map[string]catalog.Event]
}

var _ Projector = (*Service)(nil)

// NewService returns a service over engine. Register its metrics with
// RegisterMetrics; it answers queries once Start (or MarkReady) has run.
func NewService(engine Engine, st *store.Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{Engine: engine, Store: st, Log: log, Now: time.Now, Timeout: 2 * time.Second, metrics: newMetrics(engine)}
}

// MarkReady lets the service answer queries without a start-up catch-up.
func (s *Service) MarkReady() { s.ready.Store(true) }

// Ready reports whether the index can answer queries (for /readyz).
func (s *Service) Ready(ctx context.Context) error {
	if !s.ready.Load() {
		return ErrNotReady
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	_, err := s.Engine.Count(ctx)
	return err
}

// Start brings the index up to date with Postgres: a full rebuild when the
// index is new (queries are refused until it is done), else a catch-up of
// the events whose version changed (queries are served meanwhile).
func (s *Service) Start(ctx context.Context, fresh bool) error {
	if fresh {
		start := time.Now()
		n, err := s.Rebuild(ctx)
		if err != nil {
			return err
		}
		s.Log.Info("search index rebuilt", "documents", n, "took", time.Since(start).String())
		s.ready.Store(true)
		return nil
	}
	s.ready.Store(true)
	n, err := s.CatchUp(ctx)
	if err != nil {
		return err
	}
	s.Log.Info("search index caught up", "changed", n)
	return nil
}

// Apply reloads the events from Postgres and upserts them by version.
func (s *Service) Apply(ctx context.Context, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	rows, err := s.Store.SearchDocsByIDs(ctx, eventIDs)
	if err != nil {
		return fmt.Errorf("search apply: %w", err)
	}
	found := map[string]bool{}
	docs := make([]Document, 0, len(rows))
	var newest time.Time
	for _, r := range rows {
		found[r.ID] = true
		docs = append(docs, s.document(r))
		if r.UpdatedAt.After(newest) {
			newest = r.UpdatedAt
		}
	}
	var gone []string
	for _, id := range eventIDs {
		if !found[id] {
			gone = append(gone, id)
		}
	}
	if err := s.Engine.Index(ctx, docs); err != nil {
		return fmt.Errorf("search apply: %w", err)
	}
	if len(gone) > 0 {
		if err := s.Engine.Delete(ctx, gone); err != nil {
			return fmt.Errorf("search apply: %w", err)
		}
	}
	s.metrics.indexed.Add(float64(len(docs)))
	if !newest.IsZero() {
		s.metrics.lag.Set(max(0, s.Now().Sub(newest).Seconds()))
	}
	return nil
}

// CatchUp indexes the events whose Postgres version differs from the
// indexed one and deletes documents of events that no longer exist. It
// returns the number of documents changed.
func (s *Service) CatchUp(ctx context.Context) (int, error) {
	pg, err := s.Store.SearchVersions(ctx)
	if err != nil {
		return 0, fmt.Errorf("search catch-up: %w", err)
	}
	indexed, err := s.Engine.Versions(ctx)
	if err != nil {
		return 0, fmt.Errorf("search catch-up: %w", err)
	}
	var stale []string
	for _, v := range pg {
		if iv, ok := indexed[v.ID]; !ok || iv < v.Version {
			stale = append(stale, v.ID)
		}
		delete(indexed, v.ID)
	}
	for i := 0; i < len(stale); i += 500 {
		if err := s.Apply(ctx, stale[i:min(i+500, len(stale))]); err != nil {
			return 0, err
		}
	}
	var gone []string
	for id := range indexed {
		gone = append(gone, id)
	}
	if len(gone) > 0 {
		if err := s.Engine.Delete(ctx, gone); err != nil {
			return 0, fmt.Errorf("search catch-up: %w", err)
		}
	}
	return len(stale) + len(gone), nil
}

// Rebuilder is an engine that rebuilds itself from a feed of every document
// (Elasticsearch: a new index, then an alias swap).
type Rebuilder interface {
	Rebuild(ctx context.Context, feed func(yield func([]Document) error) error) error
}

// Rebuild indexes every event from Postgres and drops documents of events
// that no longer exist. It returns the number of documents indexed. Pages
// are read from Postgres while the previous one is being indexed.
func (s *Service) Rebuild(ctx context.Context) (int, error) {
	n := 0
	seen := map[string]bool{}
	feed := func(yield func([]Document) error) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type page struct {
			docs []Document
			err  error
		}
		pages := make(chan page, 2)
		go func() {
			defer close(pages)
			after := ""
			for {
				rows, err := s.Store.SearchDocsPage(ctx, after, 2000)
				if err != nil || len(rows) == 0 {
					if err != nil {
						pages <- page{err: fmt.Errorf("search rebuild: %w", err)}
					}
					return
				}
				docs := make([]Document, len(rows))
				for i, r := range rows {
					docs[i] = s.document(r)
				}
				select {
				case pages <- page{docs: docs}:
				case <-ctx.Done():
					return
				}
				after = rows[len(rows)-1].ID
			}
		}()
		for p := range pages {
			if p.err != nil {
				return p.err
			}
			for _, d := range p.docs {
				seen[d.ID] = true
			}
			if err := yield(p.docs); err != nil {
				return err
			}
			n += len(p.docs)
			s.metrics.indexed.Add(float64(len(p.docs)))
		}
		return ctx.Err()
	}
	if rb, ok := s.Engine.(Rebuilder); ok {
		return n, rb.Rebuild(ctx, feed)
	}
	if err := feed(func(d []Document) error { return s.Engine.Index(ctx, d) }); err != nil {
		return n, err
	}
	indexed, err := s.Engine.Versions(ctx)
	if err != nil {
		return n, err
	}
	var gone []string
	for id := range indexed {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		if err := s.Engine.Delete(ctx, gone); err != nil {
			return n, err
		}
	}
	if c, ok := s.Engine.(Compacter); ok {
		return n, c.Compact(ctx)
	}
	return n, nil
}

// Compacter is an engine that can reorganise itself after a bulk load.
type Compacter interface {
	Compact(ctx context.Context) error
}

// document converts a Postgres row.
func (s *Service) document(r store.SearchDoc) Document {
	d := Document{
		ID: r.ID, Name: r.Name, Description: r.Description, Category: r.Category,
		Artists: r.Artists, Venue: r.VenueName, City: r.City, Country: r.Country,
		Lat: r.Lat, Lon: r.Lon, StartsAt: r.StartsAt.UTC(),
		Version: r.Version, UpdatedAt: r.UpdatedAt,
	}
	if d.Artists == nil {
		d.Artists = []string{}
	}
	if r.MinPrice != nil {
		d.MinPrice, d.MaxPrice = *r.MinPrice, *r.MaxPrice
	}
	if r.Currency != nil {
		d.Currency = *r.Currency
	}
	return d
}

// Input is a search as the API receives it (before defaults).
type Input struct {
	Text       string
	Near       *GeoPoint
	RadiusKm   *float64
	City       string
	Categories []string
	From, To   *time.Time
	Sort       Sort
	First      int
	After      string
	Facets     bool
}

// Search validates and normalises in (defaults: radius 50 km, RELEVANCE
// with text else DATE, past events excluded unless From says otherwise) and
// runs it. An unavailable index is apperr.ErrServiceUnavailable, returned
// within Timeout.
func (s *Service) Search(ctx context.Context, in Input) (Result, error) {
	q := Query{
		Text: strings.TrimSpace(in.Text), Near: in.Near, City: strings.TrimSpace(in.City),
		Sort: in.Sort, First: in.First, After: in.After, Facets: in.Facets, RadiusKm: 50,
	}
	for _, c := range in.Categories {
		if c = strings.TrimSpace(c); c != "" {
			q.Categories = append(q.Categories, c)
		}
	}
	if q.First < 0 || q.First > 100 {
		return Result{}, apperr.Invalid("first", "must be between 0 and 100")
	}
	if len([]rune(q.Text)) > 200 {
		return Result{}, apperr.Invalid("input.text", "at most 200 characters")
	}
	if in.Near != nil {
		if in.Near.Lat < -90 || in.Near.Lat > 90 || in.Near.Lon < -180 || in.Near.Lon > 180 {
			return Result{}, apperr.Invalid("input.near", "latitude must be in [-90, 90] and longitude in [-180, 180]")
		}
	}
	if in.RadiusKm != nil {
		if *in.RadiusKm <= 0 || *in.RadiusKm > 20000 {
			return Result{}, apperr.Invalid("input.radiusKm", "must be greater than 0 and at most 20000")
		}
		q.RadiusKm = *in.RadiusKm
	}
	switch q.Sort {
	case "":
		q.Sort = SortDate
		if q.Text != "" {
			q.Sort = SortRelevance
		}
	case SortRelevance, SortDate:
	case SortDistance:
		if q.Near == nil {
			return Result{}, apperr.Invalid("input.sort", "DISTANCE needs near")
		}
	default:
		return Result{}, apperr.Invalid("input.sort", "unknown sort %q", q.Sort)
	}
	q.From = s.Now()
	if in.From != nil {
		q.From = *in.From
	}
	if in.To != nil {
		q.To = *in.To
		if !q.To.After(q.From) {
			return Result{}, apperr.Invalid("input.to", "must be after from")
		}
	}
	if !s.ready.Load() {
		return Result{}, fmt.Errorf("search: %w", apperr.ErrServiceUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	start := time.Now()
	res, err := s.cached(ctx, q, in.From == nil)
	outcome := "ok"
	defer func() { s.metrics.queries.WithLabelValues(outcome).Observe(time.Since(start).Seconds()) }()
	if errors.Is(err, ErrBadCursor) {
		outcome = "invalid"
		return Result{}, apperr.Invalid("after", "not a cursor of this search")
	}
	if err != nil {
		outcome = "error"
		s.Log.Warn("search unavailable", "err", err)
		return Result{}, fmt.Errorf("search: %v: %w", err, apperr.ErrServiceUnavailable)
	}
	return res, nil
}

// cached answers q from the result cache (the same search within
// CacheTTL; a defaulted `from` counts as the same).
func (s *Service) cached(ctx context.Context, q Query, fromNow bool) (Result, error) {
	if s.CacheTTL < 0 {
		return s.Engine.Search(ctx, q)
	}
	s.cacheOnce.Do(func() {
		ttl := s.CacheTTL
		if ttl == 0 {
			ttl = time.Second
		}
		s.cache = newTTLCache[Result](ttl)
	})
	k := q
	k.Near, k.From = nil, time.Time{}
	key := fmt.Sprintf("%#v|%v", k, fromNow)
	if q.Near != nil {
		key += fmt.Sprint(*q.Near)
	}
	return s.cache.get(ctx, key, q.From, s.timeout(), func(ctx context.Context) (Result, error) { return s.Engine.Search(ctx, q) })
}

func (s *Service) timeout() time.Duration {
	if s.Timeout <= 0 {
		return 2 * time.Second
	}
	return s.Timeout
}

type metrics struct {
	lag     prometheus.Gauge
	indexed prometheus.Counter
	queries *prometheus.HistogramVec
	docs    prometheus.GaugeFunc
}

func newMetrics(e Engine) *metrics {
	return &metrics{
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_search_index_lag_seconds",
			Help: "Time from the last catalog change of an event to its indexing, for the latest applied batch.",
		}),
		indexed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_search_documents_indexed_total",
			Help: "Search documents written to the index.",
		}),
		queries: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketing_search_query_duration_seconds",
			Help:    "Search engine query latency.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .03, .05, .1, .25, .5, 1, 2},
		}, []string{"outcome"}),
		docs: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ticketing_search_documents",
			Help: "Documents in the search index.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			n, _ := e.Count(ctx)
			return float64(n)
		}),
	}
}

// RegisterMetrics registers the search metrics on reg.
func (s *Service) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.metrics.lag, s.metrics.indexed, s.metrics.queries, s.metrics.docs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
