package testdb

import (
	"context"
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
	cmd  *exec.Cmd
}

// StartOwnRedis starts a redis-server on port (a free one when 0), waits
// until it answers and stops it when the test ends. Starting again on the
// port of a stopped one brings "the same" Redis back, empty.
func StartOwnRedis(t testing.TB, port int) *OwnRedis {
	t.Helper()
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	require.NoError(t, cmd.Start())
	r := &OwnRedis{Port: port, cmd: cmd}
	t.Cleanup(r.Stop)
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	require.Eventually(t, func() bool { return c.Ping(context.Background()).Err() == nil },
		10*time.Second, 20*time.Millisecond, "redis-server did not start")
	return r
}

// Addr is host:port.
func (r *OwnRedis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Stop kills the server (idempotent).
func (r *OwnRedis) Stop() {
	if r.cmd.Process != nil && r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// Pause freezes the server (SIGSTOP): connections stay open and nothing is
// answered, as with a hung Redis. Resume undoes it.
func (r *OwnRedis) Pause() { _ = r.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (r *OwnRedis) Resume() { _ = r.cmd.Process.Signal(syscall.SIGCONT) }
