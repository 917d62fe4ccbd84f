package store

// MigrateWith is Migrate with the numbered migrations of another FS.
var MigrateWith = migrate
