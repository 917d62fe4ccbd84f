// Package migrations embeds the SQL migrations (goose format) so that the
// ticketing binary can apply them wherever it runs.
package migrations

import "embed"

// FS holds the numbered *.sql migrations.
//
//go:embed *.sql
var FS embed.FS
