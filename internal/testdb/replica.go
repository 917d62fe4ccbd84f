package testdb

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Replicated is the private primary and its streaming replica that
// scripts/test.sh starts (scripts/lib.sh ensure_pg_replica): a test may
// stop and start that primary to play an outage; the shared server of the
// other tests is never touched. Tests using it must not run in parallel
// with each other.
type Replicated struct {
	primaryURL, replicaURL, pgdata, bin string
}

// PrivateReplicated returns the pair from TEST_PRIMARY_URL,
// TEST_REPLICA_URL, TEST_PRIMARY_PGDATA and TEST_PG_BIN, or skips the test
// when they are not set (scripts/test.sh sets them).
func PrivateReplicated(t testing.TB) *Replicated {
	t.Helper()
	r := &Replicated{os.Getenv("TEST_PRIMARY_URL"), os.Getenv("TEST_REPLICA_URL"),
		os.Getenv("TEST_PRIMARY_PGDATA"), os.Getenv("TEST_PG_BIN")}
	if r.primaryURL == "" || r.replicaURL == "" || r.pgdata == "" || r.bin == "" {
		t.Skip("no private primary and replica: run scripts/test.sh (or source scripts/lib.sh and run ensure_pg_replica)")
	}
	r.StartPrimary(t)
	t.Cleanup(func() { r.StartPrimary(t) })
	return r
}

func withDB(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewDatabase creates an empty database on the primary (dropped when the
// test ends) and returns its URL on the primary and on the replica.
func (r *Replicated) NewDatabase(t testing.TB) (primary, replica string) {
	t.Helper()
	name := "outage_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, r.primaryURL)
	require.NoError(t, err)
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `CREATE DATABASE `+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		r.StartPrimary(t)
		c, err := pgx.Connect(context.Background(), r.primaryURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			_ = c.Close(context.Background())
		}
	})
	return withDB(r.primaryURL, name), withDB(r.replicaURL, name)
}

// CaughtUp waits until the replica has replayed everything the primary
// has written so far.
func (r *Replicated) CaughtUp(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	p, err := pgx.Connect(ctx, r.primaryURL)
	require.NoError(t, err)
	var lsn string
	require.NoError(t, p.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn))
	_ = p.Close(ctx)
	rc, err := pgx.Connect(ctx, r.replicaURL)
	require.NoError(t, err)
	defer rc.Close(ctx)
	require.Eventually(t, func() bool {
		var ok bool
		err := rc.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&ok)
		return err == nil && ok
	}, 30*time.Second, 20*time.Millisecond, "the replica did not catch up")
}

func (r *Replicated) pgctl(t testing.TB, args ...string) {
	t.Helper()
	keepInheritedFiles()
	cmd := exec.Command(filepath.Join(r.bin, "pg_ctl"), append([]string{"-D", r.pgdata}, args...)...)
	if os.Geteuid() == 0 { // Postgres refuses to run as root
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", cmd.Path}, cmd.Args[1:]...)...)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pg_ctl %v: %s", args, out)
}

// StopPrimary stops the primary (fast shutdown: connections are cut).
func (r *Replicated) StopPrimary(t testing.TB) {
	t.Helper()
	if r.running() {
		r.pgctl(t, "-m", "fast", "-w", "stop")
	}
}

// StartPrimary starts the primary if it is stopped and waits for it.
func (r *Replicated) StartPrimary(t testing.TB) {
	t.Helper()
	if !r.running() {
		r.pgctl(t, "-w", "-l", filepath.Join(filepath.Dir(r.pgdata), "primary.log"), "start")
	}
}

func (r *Replicated) running() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, r.primaryURL)
	if err != nil {
		return false
	}
	_ = c.Close(ctx)
	return true
}

// keepInheritedFiles marks the descriptors this process inherited (beyond
// stdin, stdout and stderr) close-on-exec, so a server it starts does not
// keep them: a benchmark run under `flock FILE go test ...` would otherwise
// leave the lock held by the Postgres it restarted, long after it ended.
// Go opens its own files close-on-exec already.
var keepInheritedFiles = sync.OnceFunc(func() {
	for fd := 3; fd < 256; fd++ {
		syscall.CloseOnExec(fd)
	}
})
