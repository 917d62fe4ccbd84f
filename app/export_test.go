package app

import "github.com/jackc/pgx/v5/pgxpool"

// OrdersPool is the pool of orders and payments (initOrders), for the
// priority tests of package app_test.
func (a *App) OrdersPool() *pgxpool.Pool { return a.ordersPool }
