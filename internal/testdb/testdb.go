// Package testdb gives tests an isolated, migrated Postgres database and a
// Redis key prefix, against the real servers (TEST_DATABASE_URL, default the
// local socket; TEST_REDIS_URL, default 127.0.0.1:6379/15).
//
// The first caller on a machine migrates a template database (guarded by an
// advisory lock, so parallel test binaries agree); every test then gets its
// own database cloned from it with CREATE DATABASE ... TEMPLATE, which takes
// milliseconds, and dropped when the test ends.
package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/ticketing/ticketing/migrations"
	"github.com/ticketing/ticketing/store"
)

// BaseURL is the server to use, naming any database (it is replaced).
func BaseURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres:///postgres?host=/var/run/postgresql&user=postgres"
}

// RedisURL is the Redis server for tests.
func RedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/15"
}

// URLFor returns BaseURL pointing at database name.
func URLFor(name string) string {
	u, err := url.Parse(BaseURL())
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// migrationsHash names the template after the content of the migrations
// and of the SQL functions, so a changed migration or function gets a new
// template instead of a stale one.
func migrationsHash() string {
	h := sha256.New()
	for _, fsys := range []fs.FS{migrations.FS, migrations.Functions} {
		names, _ := fs.Glob(fsys, "*.sql")
		fns, _ := fs.Glob(fsys, "functions/*.sql")
		names = append(names, fns...)
		sort.Strings(names)
		for _, n := range names {
			b, _ := fs.ReadFile(fsys, n)
			h.Write([]byte(n))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func ensureTemplate(ctx context.Context) (string, error) {
	templateOnce.Do(func() {
		templateName = "ticketing_tmpl_" + migrationsHash()
		templateErr = createTemplate(ctx, templateName)
	})
	return templateName, templateErr
}

func createTemplate(ctx context.Context, name string) error {
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return fmt.Errorf("testdb: connect %s: %w", BaseURL(), err)
	}
	defer admin.Close(ctx)
	// Serialise template creation across test binaries.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(727274)"); err != nil {
		return err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(727274)")
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, URLFor(name))
	if err != nil {
		return err
	}
	err = store.Migrate(ctx, pool, nil)
	pool.Close()
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH is_template = true ALLOW_CONNECTIONS = false")
	return err
}

// poolMaxConns bounds every pool opened on a test database URL (the test's
// own pool and the pools of any App or process given that URL). Tests run
// in parallel across and within packages against one server whose
// max_connections is 100 by default: unbounded pools exhaust it.
const poolMaxConns = "8"

// NewDatabase creates a fresh migrated database for the test and returns its
// URL (with pool_max_conns set); the database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	tmpl, err := ensureTemplate(ctx)
	if err != nil {
		t.Fatalf("testdb: template: %v", err)
	}
	name := "ticketing_t_" + strings.ReplaceAll(uuid.NewString()[:18], "-", "")
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{tmpl}.Sanitize())); err != nil {
		t.Fatalf("testdb: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, BaseURL())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	u, err := url.Parse(URLFor(name))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", poolMaxConns)
	u.RawQuery = q.Encode()
	return u.String()
}

// NewPool returns a pool on a fresh database, closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// RedisPrefix returns a key prefix unique to the test.
func RedisPrefix(t testing.TB) string {
	return "test:" + uuid.NewString()[:8] + ":"
}

// RedisCluster reports whether tests run against the Redis Cluster
// (TEST_REDIS_MODE=cluster with TEST_REDIS_CLUSTER_ADDRS, as scripts/test.sh
// sets for its cluster pass) instead of one Redis (TEST_REDIS_URL).
func RedisCluster() []string {
	if os.Getenv("TEST_REDIS_MODE") != "cluster" {
		return nil
	}
	var out []string
	for _, a := range strings.Split(os.Getenv("TEST_REDIS_CLUSTER_ADDRS"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// NewRedis is a client of the test Redis: the cluster in cluster mode
// (RedisCluster), else RedisURL. Closed when the test ends.
func NewRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	if addrs := RedisCluster(); len(addrs) > 0 {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	} else {
		opt, err := redis.ParseURL(RedisURL())
		if err != nil {
			t.Fatal(err)
		}
		opt.ContextTimeoutEnabled = true
		c = redis.NewClient(opt)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisEnv is the App's Redis settings for tests: REDIS_URL, plus
// REDIS_CLUSTER_ADDRS in cluster mode.
func RedisEnv() map[string]string {
	env := map[string]string{"REDIS_URL": RedisURL()}
	if addrs := RedisCluster(); len(addrs) > 0 {
		env["REDIS_CLUSTER_ADDRS"] = strings.Join(addrs, ",")
	}
	return env
}
