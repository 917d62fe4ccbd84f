package testdb

import (
	"context"
	"testing"
)

func TestNewPoolIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	a, b := NewPool(t), NewPool(t)
	ctx := context.Background()
	if _, err := a.Exec(ctx, "INSERT INTO artists (id, name) VALUES (gen_random_uuid(), 'Solo en A')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM artists").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d artists of database a", n)
	}
}
