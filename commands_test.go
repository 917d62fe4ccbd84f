package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/testdb"
)

// The command line of the contract, run as `ticketing <command>` runs it
// (run with an environment), against a real database and Redis.
func TestCommands(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	env := map[string]string{"DATABASE_URL": testdb.NewDatabase(t), "REDIS_URL": testdb.RedisURL(),
		"SEARCH_DIR": t.TempDir(), "JWT_HS256_SECRET": secret}
	ticketing := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
		return out.String(), errOut.String(), err
	}
	code := func(err error) int {
		var c exitCode
		if errors.As(err, &c) {
			return int(c)
		}
		return -1
	}

	out, _, err := ticketing("seed", "--demo")
	require.NoError(t, err)
	m := regexp.MustCompile(`created (\d+) venues, (\d+) artists, (\d+) events`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.NotEqual(t, "0", m[3])
	out, _, err = ticketing("seed", "--demo")
	require.NoError(t, err)
	require.Contains(t, out, "created 0 venues, 0 artists, 0 events", "idempotent")

	out, _, err = ticketing("reindex")
	require.NoError(t, err)
	require.Regexp(t, `^reindexed `+m[3]+` events \(embedded\) in `, out)

	out, _, err = ticketing("token", "--sub", "alice", "--roles", "admin")
	require.NoError(t, err)
	v, err := auth.NewVerifier(auth.Config{Issuer: "ticketing-dev", Audience: "ticketing", HS256Secret: secret})
	require.NoError(t, err)
	u, err := v.Verify(strings.TrimSpace(out))
	require.NoError(t, err)
	require.Equal(t, auth.User{ID: "alice", Roles: []string{"admin"}}, u)

	// audit: exit 0 clean, 1 anomalies, 2 usage or could not check; the summary first.
	pool, err := pgxpool.New(context.Background(), env["DATABASE_URL"])
	require.NoError(t, err)
	var eventID string
	var units int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT event_id::text, count(*)::int FROM inventory GROUP BY event_id ORDER BY count(*) DESC LIMIT 1`).Scan(&eventID, &units))
	pool.Close()
	env["PAYMENTS_BASE_URL"] = "http://127.0.0.1:1" // no payments here: the provider is never asked
	out, _, err = ticketing("audit", "--event", eventID)
	require.NoError(t, err, out)
	require.True(t, strings.HasPrefix(out, "event "+eventID+": clean\n\nsummary:\n  seats and units: "), out)
	require.Less(t, strings.Index(out, "summary:"), strings.Index(out, "anomalies (0):"))
	require.Contains(t, out, "(0 of "+strconv.Itoa(units)+"; --all-seats", "free seats are counted, not listed")
	require.Less(t, strings.Count(out, "\n"), 20, out)
	out, _, err = ticketing("audit", "--event", eventID, "--all-seats")
	require.NoError(t, err)
	require.Equal(t, units, strings.Count(out, " AVAILABLE\n"), "every free seat listed")
	out, _, err = ticketing("audit", "--event", eventID, "--anomalies-only")
	require.NoError(t, err)
	require.NotContains(t, out, "payments (")
	out, _, err = ticketing("audit", "--event", eventID, "--json")
	require.NoError(t, err)
	var doc struct {
		Outcome string
		Summary struct{ Seats map[string]int }
		Units   []any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "clean", doc.Outcome)
	require.Equal(t, units, doc.Summary.Seats["AVAILABLE"])
	require.Empty(t, doc.Units)
	out, _, err = ticketing("audit", "--help")
	require.NoError(t, err, "--help is not an error")
	require.Contains(t, out, "usage: ticketing audit --event ID")
	for _, bad := range [][]string{{"audit"}, {"audit", "--event", "12'; DROP"}, {"audit", "--event", "00000000-0000-0000-0000-000000000000"}, {"audit", "--bogus"}} {
		_, errOut, err := ticketing(bad...)
		require.Equal(t, 2, code(err), "%v: %s", bad, errOut)
		require.NotContains(t, errOut, "SQLSTATE", "%v: no raw SQL error", bad)
	}
	db := env["DATABASE_URL"]
	env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:1/ticketing" // nothing listens there
	_, errOut, err := ticketing("audit", "--event", eventID)
	require.Equal(t, 2, code(err), errOut)
	require.Contains(t, errOut, "audit: could not audit")
	env["DATABASE_URL"] = db

	_, errOut, err = ticketing("frobnicate")
	require.Equal(t, 2, code(err))
	require.Contains(t, errOut, `unknown command "frobnicate"`)
	_, _, err = ticketing("seed")
	require.Equal(t, 2, code(err), "seed needs --demo or --events")

	env["DATABASE_URL"] = "localhost/ticketing"
	_, _, err = ticketing("migrate")
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "config: DATABASE_URL:"), err.Error())
	require.NotContains(t, err.Error(), "\n")
}
