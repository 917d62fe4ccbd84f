package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// cpuSnap is the CPU time used so far by this process (the in-process API
// server and the load generator), by the Postgres backends connected to the
// bench database (the app's pool, the notifier and relay connections) and
// by the Redis server.
type cpuSnap struct {
	self, redis time.Duration
	pg          map[int]time.Duration // backend pid -> CPU
	xacts       int64                 // transactions of the bench database (pg_stat_database)
}

// cpuMeter takes the snapshots: Postgres backends from /proc (same host),
// Redis from INFO cpu.
type cpuMeter struct {
	pool *pgxpool.Pool
	rdb  redis.UniversalClient
	db   string
}

func (m *cpuMeter) snap(ctx context.Context) cpuSnap {
	var s cpuSnap
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.pg = map[int]time.Duration{}
	rows, err := m.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, m.db)
	if err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				s.pg[pid] = procCPU(pid)
			}
		}
		rows.Close()
	}
	_ = m.pool.QueryRow(ctx, `SELECT pg_stat_force_next_flush()`).Scan(new(any))
	_ = m.pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, m.db).Scan(&s.xacts)
	if info, err := m.rdb.Info(ctx, "cpu").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				f, _ := strconv.ParseFloat(v, 64)
				s.redis += time.Duration(f * float64(time.Second))
			}
		}
	}
	return s
}

// procCPU is utime + stime of a process (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may contain spaces) in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// perHold formats the CPU used between two snapshots, per successful hold
// (ms): this process, Postgres backends of the bench database, Redis.
func perHold(a, b cpuSnap, holds float64) string {
	if holds <= 0 {
		return ""
	}
	var pg time.Duration
	for pid, t := range b.pg {
		pg += t - a.pg[pid] // a backend born during the run started at 0
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / holds }
	return fmt.Sprintf("cpu ms/hold: go %.2f pg %.2f redis %.2f; pg xacts/hold %.2f", ms(b.self-a.self), ms(pg), ms(b.redis-a.redis),
		float64(b.xacts-a.xacts)/holds)
}
