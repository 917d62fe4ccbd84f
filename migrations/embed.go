// Package migrations embeds the SQL migrations (goose format) so that the
// ticketing binary can apply them wherever it runs, and the SQL functions
// applied after them.
package migrations

import "embed"

// FS holds the numbered *.sql migrations (tables, indexes, data).
//
//go:embed *.sql
var FS embed.FS

// Functions holds functions/*.sql: every SQL function and view (and the trigger that
// calls it), one file each, written with CREATE OR REPLACE. store.Migrate
// applies them, in name order, after the numbered migrations, so a function's
// current body is its file and nothing else.
//
//go:embed functions/*.sql
var Functions embed.FS
