package store_test

import (
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/migrations"
	"github.com/ticketing/ticketing/store"
)

// fnDef finds each function of a functions/*.sql file and its body; viewDef
// each view.
var (
	fnDef   = regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION (\w+)\(.*?\$\$(.*?)\$\$`)
	viewDef = regexp.MustCompile(`CREATE OR REPLACE VIEW (\w+)`)
)

// requireFunctionsAreFiles checks that every function in the database is
// one of migrations/functions/*.sql with the file's body, that every file's
// function is there, and that every file's view exists.
func requireFunctionsAreFiles(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	names, err := store.FunctionFiles()
	require.NoError(t, err)
	require.NotEmpty(t, names)
	want := map[string]string{}
	for _, n := range names {
		b, err := fs.ReadFile(migrations.Functions, n)
		require.NoError(t, err)
		defs := fnDef.FindAllStringSubmatch(string(b), -1)
		views := viewDef.FindAllStringSubmatch(string(b), -1)
		require.NotEmpty(t, append(defs, views...), "%s defines no function or view", n)
		for _, v := range views {
			var exists bool
			require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, v[1]).Scan(&exists))
			require.True(t, exists, "%s: view %s missing", n, v[1])
		}
		for _, d := range defs {
			require.NotContains(t, want, d[1], "%s: function defined twice", n)
			want[d[1]] = d[2]
		}
	}
	got := map[string]string{}
	rows, err := pool.Query(ctx, `
		SELECT p.proname, p.prosrc FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.prokind = 'f'
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		  AND p.proname NOT LIKE 'river%'`)
	require.NoError(t, err)
	for rows.Next() {
		var name, src string
		require.NoError(t, rows.Scan(&name, &src))
		got[name] = src
	}
	require.NoError(t, rows.Err())
	require.Equal(t, want, got)
}

func TestAppliedFunctionsAreTheFiles(t *testing.T) {
	t.Parallel()
	requireFunctionsAreFiles(t, testdb.NewPool(t))
	var triggers int
	require.NoError(t, testdb.NewPool(t).QueryRow(context.Background(),
		`SELECT count(*) FROM pg_trigger WHERE tgname = 'holds_refuse_cancelled_event'`).Scan(&triggers))
	require.Equal(t, 1, triggers)
}

// TestMigrateDevDatabaseAndLaterFiles: a development database migrated
// before the squash (goose rows 1-20, a stale function body) is migrated
// without error, gets the functions' current bodies, and a numbered file
// added after the baseline is still applied.
func TestMigrateDevDatabaseAndLaterFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO goose_db_version (version_id, is_applied)
		SELECT v, true FROM unnest('{1,2,3,5,8,9,10,11,12,13,14,15,16,17,18,19}'::bigint[]) v;
		CREATE OR REPLACE FUNCTION holds_refuse_cancelled_event() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RETURN NEW; END $$;`)
	require.NoError(t, err)

	numbered := fstest.MapFS{}
	names, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		require.NoError(t, err)
		numbered[n] = &fstest.MapFile{Data: b}
	}
	numbered["00099_probe.sql"] = &fstest.MapFile{Data: []byte(
		"-- +goose Up\nCREATE TABLE migrate_probe (id int);\n-- +goose Down\nDROP TABLE migrate_probe;\n")}
	require.NoError(t, store.MigrateWith(ctx, pool, nil, numbered))
	requireFunctionsAreFiles(t, pool)
	var probe bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('migrate_probe') IS NOT NULL`).Scan(&probe))
	require.True(t, probe, "a numbered migration after the baseline was not applied")
	// Run again: nothing left to do.
	require.NoError(t, store.MigrateWith(ctx, pool, nil, numbered))
}

// TestRefusalsAreTheSQLs: the reasons hold_create and its trigger raise
// (ERRCODE 'TKH00', the reason as MESSAGE) are exactly store.Refusals.
func TestRefusalsAreTheSQLs(t *testing.T) {
	t.Parallel()
	raise := regexp.MustCompile(`ERRCODE = 'TKH00', MESSAGE = '(\w+)'`)
	names, err := store.FunctionFiles()
	require.NoError(t, err)
	inSQL := map[store.Refusal]bool{}
	for _, n := range names {
		b, err := fs.ReadFile(migrations.Functions, n)
		require.NoError(t, err)
		require.Equal(t, strings.Count(string(b), "'TKH00'"), len(raise.FindAllString(string(b), -1)),
			"%s: a TKH00 RAISE not written as ERRCODE = 'TKH00', MESSAGE = '...'", n)
		for _, m := range raise.FindAllStringSubmatch(string(b), -1) {
			inSQL[store.Refusal(m[1])] = true
		}
	}
	inGo := map[store.Refusal]bool{}
	for _, r := range store.Refusals {
		inGo[r] = true
	}
	require.Equal(t, inGo, inSQL)
}
