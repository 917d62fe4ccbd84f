package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/store"
)

// TestSaleStatus: the one rule the catalog and the search documents share,
// the same as hold_create's sale_open.
func TestSaleStatus(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	before, after := now.Add(-time.Hour), now.Add(time.Hour)
	for _, c := range []struct {
		name                string
		starts              time.Time
		ends, cancelled     *time.Time
		capacity, available int
		want                string
	}{
		{"open", before, &after, nil, 10, 3, store.SaleOnSale},
		{"open without an end", before, nil, nil, 10, 3, store.SaleOnSale},
		{"not yet", after, nil, nil, 10, 10, store.SaleNotOnSaleYet},
		{"opens exactly now", now, nil, nil, 10, 10, store.SaleOnSale},
		{"ended", before, &before, nil, 10, 3, store.SaleEnded},
		{"ends exactly now", before, &now, nil, 10, 3, store.SaleEnded},
		{"sold out", before, nil, nil, 10, 0, store.SaleSoldOut},
		{"no inventory is never sold out", before, nil, nil, 0, 0, store.SaleOnSale},
		{"cancelled wins over everything", after, nil, &before, 10, 0, store.SaleEnded},
		{"cancelled while on sale", before, &after, &before, 10, 3, store.SaleEnded},
	} {
		require.Equal(t, c.want, store.SaleStatus(now, c.starts, c.ends, c.cancelled, c.capacity, c.available), c.name)
	}
}
