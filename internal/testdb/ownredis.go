package testdb

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// OwnRedis is a private redis-server on its own port (never the shared
// one), without persistence like the shared one, that a test may stop and
// start again to play a Redis outage.
type OwnRedis struct {
	Port int
	// Log is the server's log file, when it has one.
	Log string
	cmd *exec.Cmd
}

// StartOwnRedis starts a redis-server on port (a free one when 0), waits
// until it answers and stops it when the test ends. Starting again on the
// port of a stopped one brings "the same" Redis back, empty.
func StartOwnRedis(t testing.TB, port int) *OwnRedis {
	t.Helper()
	return startRedis(t, port)
}

// startRedis starts a redis-server without persistence on port (a free one
// when 0) with the extra arguments, waits until it answers and stops it
// when the test ends.
func startRedis(t testing.TB, port int, extra ...string) *OwnRedis {
	t.Helper()
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no"}, extra...)
	keepInheritedFiles()
	cmd := exec.Command("redis-server", args...)
	require.NoError(t, cmd.Start())
	r := &OwnRedis{Port: port, cmd: cmd}
	t.Cleanup(r.Stop)
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	require.Eventually(t, func() bool { return c.Ping(context.Background()).Err() == nil },
		10*time.Second, 20*time.Millisecond, "redis-server did not start")
	return r
}

// Running reports whether the server has not been stopped.
func (r *OwnRedis) Running() bool { return r.cmd.Process != nil && r.cmd.ProcessState == nil }

// Do sends one command to this server alone (not through a cluster
// client).
func (r *OwnRedis) Do(t testing.TB, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), Protocol: 2})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

// MustDo is Do failing the test on an error.
func (r *OwnRedis) MustDo(t testing.TB, args ...any) any {
	t.Helper()
	v, err := r.Do(t, args...)
	require.NoError(t, err, "%s: %v", r.Addr(), args)
	return v
}

// ID is the server's cluster node id.
func (r *OwnRedis) ID(t testing.TB) string {
	t.Helper()
	return fmt.Sprint(r.MustDo(t, "CLUSTER", "MYID"))
}

// isPrimary reports whether the cluster node is a primary now.
func (r *OwnRedis) isPrimary(t testing.TB) bool {
	t.Helper()
	v := r.MustDo(t, "ROLE")
	role, _ := v.([]any)
	return len(role) > 0 && role[0] == "master"
}

// Addr is host:port.
func (r *OwnRedis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Stop kills the server (idempotent).
func (r *OwnRedis) Stop() {
	if r.Running() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// Pause freezes the server (SIGSTOP): connections stay open and nothing is
// answered, as with a hung Redis. Resume undoes it.
func (r *OwnRedis) Pause() { _ = r.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (r *OwnRedis) Resume() { _ = r.cmd.Process.Signal(syscall.SIGCONT) }
