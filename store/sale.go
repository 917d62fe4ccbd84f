package store

import "time"

// Sale statuses (Event.saleStatus), judged by SaleStatus.
const (
	SaleNotOnSaleYet = "NOT_ON_SALE_YET"
	SaleOnSale       = "ON_SALE"
	SaleSoldOut      = "SOLD_OUT"
	SaleEnded        = "ENDED"
)

// SaleStatus is the one rule for where an event's sale stands at now, the
// way hold_create decides whether a hold may be taken (sale open from
// sale_starts_at until sale_ends_at, the SQL function event_sale_open;
// never once cancelled_at is set):
// catalog (Event.saleStatus) and the search documents both call it.
// capacity 0 is an event without inventory, never SOLD_OUT.
func SaleStatus(now, saleStartsAt time.Time, saleEndsAt, cancelledAt *time.Time, capacity, available int) string {
	switch {
	case cancelledAt != nil:
		return SaleEnded
	case now.Before(saleStartsAt):
		return SaleNotOnSaleYet
	case saleEndsAt != nil && !now.Before(*saleEndsAt):
		return SaleEnded
	case capacity > 0 && available == 0:
		return SaleSoldOut
	}
	return SaleOnSale
}
