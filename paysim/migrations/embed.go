// Package migrations embeds the sandbox payment provider's own goose
// migrations. They create tables in the "paysim" schema only and keep their
// history in paysim.goose_db_version, apart from the product's migrations.
package migrations

import "embed"

// FS holds the numbered *.sql migrations of paysim.
//
//go:embed *.sql
var FS embed.FS
