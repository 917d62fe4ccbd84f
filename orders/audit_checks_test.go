package orders_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/store"
)

// Every audit check has a planted test: each case starts from a clean
// event (the audit finds nothing), plants one wrong state with SQL, and
// requires the check's kind among the anomalies. A check without a case
// fails the test.
func TestEveryAuditCheckFindsItsPlantedAnomaly(t *testing.T) {
	t.Parallel()
	type plant func(e *env) []string // the SQL to run on the event's database
	cases := map[string]plant{
		"SEAT_SOLD_TWICE": func(e *env) []string {
			_, o1, _ := e.confirmed(user("alice"), 0)
			_, o2, _ := e.confirmed(user("bob"), 1)
			return []string{`DROP INDEX tickets_one_valid`,
				`INSERT INTO tickets (id, order_id, event_id, inventory_id, section_id, seat_id, code)
				 SELECT gen_random_uuid(), '` + o2.ID + `', event_id, inventory_id, section_id, seat_id, 'copy-' || code
				 FROM tickets WHERE order_id = '` + o1.ID + `'`}
		},
		"SOLD_WITHOUT_TICKET": func(e *env) []string {
			_, o, _ := e.confirmed(user("alice"), 0)
			return []string{`UPDATE tickets SET status = 'VOID' WHERE order_id = '` + o.ID + `'`}
		},
		"TICKET_WITHOUT_SALE": func(e *env) []string {
			_, o, _ := e.confirmed(user("alice"), 0)
			return []string{`UPDATE inventory SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL, order_id = NULL WHERE order_id = '` + o.ID + `'`}
		},
		"CONFIRMED_WITHOUT_PAYMENT": func(e *env) []string {
			_, _, p := e.confirmed(user("alice"), 0)
			return []string{`UPDATE payments SET status = 'FAILED' WHERE id = '` + p.ID + `'`}
		},
		"PAYMENT_WITHOUT_ORDER": func(e *env) []string {
			_, _, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE payments SET status = 'SUCCEEDED' WHERE id = '` + p.ID + `'`}
		},
		"REDUNDANT_CHARGE": func(e *env) []string {
			_, o, _ := e.confirmed(user("alice"), 0)
			return []string{`INSERT INTO payments (id, order_id, attempt, status, amount, currency, provider, idempotency_key)
				VALUES (gen_random_uuid(), '` + o.ID + `', 2, 'SUCCEEDED', 5000, 'EUR', 'sandbox', 'planted-2')`}
		},
		"REFUND_OVERDUE": func(e *env) []string {
			_, _, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE payments SET status = 'REFUND_PENDING', updated_at = now() - interval '1 hour' WHERE id = '` + p.ID + `'`}
		},
		"PARTIAL_REFUND": func(e *env) []string {
			_, _, p := e.confirmed(user("alice"), 0)
			return []string{`UPDATE payments SET reversal = 'partial_refund', refunded_amount = 100 WHERE id = '` + p.ID + `'`}
		},
		"PAYMENT_MISMATCH": func(e *env) []string {
			_, _, p := e.checkout(user("alice"), 0)
			return []string{`INSERT INTO payment_mismatches (provider, provider_payment_id, payment_id, amount, currency, provider_status, reason)
				VALUES ('sandbox', 'pay_planted', '` + p.ID + `', 1, 'USD', 'succeeded', 'planted')`}
		},
		"OPEN_ATTEMPT_ON_ENDED_ORDER": func(e *env) []string {
			_, o, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE orders SET status = 'EXPIRED' WHERE id = '` + o.ID + `'`,
				`UPDATE payments SET updated_at = now() - interval '1 hour' WHERE id = '` + p.ID + `'`}
		},
		"PAYABLE_FAILED_ATTEMPT": func(e *env) []string {
			_, o, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE orders SET status = 'EXPIRED' WHERE id = '` + o.ID + `'`,
				`UPDATE payments SET status = 'FAILED', provider = 'stripe', updated_at = now() - interval '1 hour' WHERE id = '` + p.ID + `'`}
		},
		"CONFIRMED_WITHOUT_SALE": func(e *env) []string {
			_, o, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE orders SET status = 'CONFIRMED' WHERE id = '` + o.ID + `'`,
				`UPDATE payments SET status = 'SUCCEEDED' WHERE id = '` + p.ID + `'`}
		},
		"SOLD_WITHOUT_CONFIRMED_ORDER": func(e *env) []string {
			_, o, _ := e.confirmed(user("alice"), 0)
			return []string{`UPDATE orders SET status = 'EXPIRED' WHERE id = '` + o.ID + `'`}
		},
		"UNMATCHED_NOTIFICATION": func(e *env) []string {
			_, _, p := e.checkout(user("alice"), 0)
			return []string{`INSERT INTO webhook_inbox (id, provider, type, payload, processed_at)
				VALUES ('evt_planted', 'sandbox', 'payment.succeeded', '{"data": {"id": "pay_other", "reference": "` + p.ID + `"}}', now())`}
		},
		"UNKNOWN_NOTIFICATION": func(e *env) []string {
			return []string{`INSERT INTO webhook_inbox (id, provider, type, payload, processed_at)
				VALUES ('evt_planted', 'sandbox', 'payment.succeeded', '{"data": {"id": "pay_nobody", "reference": "` + uuid.NewString() + `"}}', now())`}
		},
		"ACTIVE_HOLD_NOT_HELD": func(e *env) []string {
			h := e.hold(user("alice"), []int{0}, 0)
			return []string{`UPDATE inventory SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL
				WHERE hold_id = '` + h.ID + `'`}
		},
		"CAPACITY_MISMATCH": func(e *env) []string {
			return []string{`DELETE FROM inventory WHERE event_id = '` + e.ev.ID + `' AND section_id = '` + e.ev.GA + `' AND unit_no = 10`}
		},
		// Go checks (audit.goChecks), with the provider's answers.
		"UNSETTLED_PAYMENT": func(e *env) []string {
			_, _, p := e.confirmed(user("alice"), 0)
			return []string{`UPDATE payments SET status = 'PENDING', updated_at = now() - interval '1 hour' WHERE id = '` + p.ID + `'`}
		},
		"PROVIDER_MISMATCH": func(e *env) []string {
			_, _, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE payments SET status = 'CANCELLED' WHERE id = '` + p.ID + `'`}
		},
		"PAYMENT_OUTCOME_UNKNOWN": func(e *env) []string {
			_, _, p := e.checkout(user("alice"), 0)
			return []string{`UPDATE payments SET status = 'UNKNOWN', provider_ref = NULL, created_at = now() - interval '2 days' WHERE id = '` + p.ID + `'`}
		},
	}
	for _, c := range store.AuditChecks {
		require.Contains(t, cases, c.Kind, "audit check %s has no planted case", c.Kind)
	}
	for kind, plant := range cases {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{})
			stmts := plant(e)
			r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{Provider: e.sb, RefundGrace: time.Minute})
			require.NoError(t, err)
			require.Empty(t, r.Anomalies, "clean before planting")
			for _, q := range stmts {
				_, err := e.pool.Exec(e.ctx, q)
				require.NoError(t, err, q)
			}
			r, err = audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{Provider: e.sb, RefundGrace: time.Minute})
			require.NoError(t, err)
			kinds := map[string]bool{}
			for _, a := range r.Anomalies {
				kinds[a.Kind] = true
			}
			require.True(t, kinds[kind], "%s not reported: %+v", kind, r.Anomalies)
		})
	}
}
