package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

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

	_, errOut, err := ticketing("frobnicate")
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
