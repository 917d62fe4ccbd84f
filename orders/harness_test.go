package orders_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/paysimtest"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
	"github.com/ticketing/ticketing/tickets"
)

const testSecret = "whsec_orders_test"

var ticketKey = []byte("ticket-key-for-tests-0123456789")

// ticketKeys are the Ed25519 keys derived from ticketKey, as the app
// derives them from TICKET_SIGNING_KEY.
var ticketKeys = func() *tickets.Keys {
	k, err := tickets.NewKeys(ticketKey)
	if err != nil {
		panic(err)
	}
	return k
}()

// paysimURL is the sandbox provider, run by TestMain as a separate process
// with its state in the database paysimDB.
var paysimURL, paysimDB string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ps, stop, err := paysimtest.Start(testSecret)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	paysimURL = ps.URL
	paysimDB = ps.DatabaseURL
	return m.Run()
}

// env is one test's world: its own database, the orders service with its
// webhook endpoint on a local server, and an event to sell.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	st     *store.Store
	holds  *holds.Service
	svc    *orders.Service
	srv    *httptest.Server
	ev     event
	ctx    context.Context
	sb     *payments.Sandbox
	cancel context.CancelFunc
}

type envOpts struct {
	simulate map[string]any
	workers  bool
	// providerTimeout for the orders service's provider calls.
	httpTimeout time.Duration
	// transport, if set, carries the service's calls to paysim (fault
	// injection on the network path).
	transport http.RoundTripper
}

type event = fixtures.Event

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{t: t, pool: pool, st: st, ctx: ctx, cancel: cancel}
	e.holds = holds.New(st, holds.Config{})
	mux := http.NewServeMux()
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	hc := http.DefaultClient
	if o.httpTimeout > 0 || o.transport != nil {
		hc = &http.Client{Timeout: o.httpTimeout, Transport: o.transport}
	}
	e.sb = payments.NewSandbox(paysimURL, testSecret, hc)
	svc, err := orders.New(st, orders.Config{
		Provider:          e.sb,
		PublicBaseURL:     e.srv.URL,
		TicketKeys:        ticketKeys,
		Holds:             e.holds,
		Simulate:          o.simulate,
		ReconcileAfter:    time.Second,
		ReconcileInterval: 500 * time.Millisecond,
		CancelSweepAfter:  50 * time.Millisecond,
		Log:               slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	e.svc = svc
	mux.Handle("POST /webhooks/payments", svc.WebhookHandler())
	if o.workers {
		e.startWorkers()
	}
	e.ev = createEvent(t, pool)
	return e
}

// checkout holds seat for u and orders it; the payment is pending at paysim
// with a checkout page.
func (e *env) checkout(u auth.User, seat int) (holds.Hold, orders.Order, orders.Payment) {
	e.t.Helper()
	h := e.hold(u, []int{seat}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k-"+h.ID)
	require.NoError(e.t, err)
	return h, o, e.lastPayment(o.ID)
}

// newUnansweredEnv is an env whose provider never answers a create (paysim
// create_timeout: the payment exists there, its answer is lost), and an
// order of u for seat 0 whose attempt is therefore UNKNOWN, without a
// provider id.
func newUnansweredEnv(t *testing.T, u auth.User) (*env, orders.Order, orders.Payment) {
	t.Helper()
	e := newEnv(t, envOpts{httpTimeout: 300 * time.Millisecond, simulate: map[string]any{"create_timeout": true}})
	h := e.hold(u, []int{0}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	p := e.payments(o.ID)[0]
	require.Equal(t, orders.PaymentUnknown, p.Status)
	require.Nil(t, p.ProviderRef)
	return e, o, p
}

// startWorkers runs the service's river workers until the test ends.
func (e *env) startWorkers() {
	done := make(chan struct{})
	go func() { defer close(done); _ = e.svc.RunWorkers(e.ctx) }()
	e.t.Cleanup(func() { e.cancel(); <-done })
}

// paysimScan runs a query on paysim's own database and scans its row.
func paysimScan(t *testing.T, sql string, args []any, dest ...any) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), paysimDB)
	require.NoError(t, err)
	defer c.Close(context.Background())
	require.NoError(t, c.QueryRow(context.Background(), sql, args...).Scan(dest...))
}

// providerCharges counts the payments paysim holds for our attempt.
func providerCharges(t *testing.T, reference string) int {
	t.Helper()
	var n int
	paysimScan(t, `SELECT count(*) FROM paysim.payments WHERE reference = $1`, []any{reference}, &n)
	return n
}

// providerDeliveries counts the notifications about our attempt that paysim
// has queued, and those still to deliver (neither delivered nor given up).
func providerDeliveries(t *testing.T, reference string) (total, pending int) {
	t.Helper()
	paysimScan(t, `
SELECT count(*), count(*) FILTER (WHERE d.delivered_at IS NULL AND d.gave_up_at IS NULL)
FROM paysim.deliveries d
JOIN paysim.events e ON e.id = d.event_id JOIN paysim.payments p ON p.id = e.payment_id
WHERE p.reference = $1`, []any{reference}, &total, &pending)
	return total, pending
}

// paysimPaymentID is paysim's id of the payment created for our attempt.
func paysimPaymentID(t *testing.T, reference string) string {
	t.Helper()
	var id string
	paysimScan(t, `SELECT id FROM paysim.payments WHERE reference = $1`, []any{reference}, &id)
	return id
}

// createEvent writes a fixture event on sale (fixtures.SmallEvent).
func createEvent(t *testing.T, pool *pgxpool.Pool) event {
	return fixtures.SmallEvent(t, pool, fixtures.EventOptions{})
}

func user(id string) auth.User { return auth.User{ID: id} }

// hold holds seats (by index) and ga units for u.
func (e *env) hold(u auth.User, seats []int, ga int) holds.Hold {
	e.t.Helper()
	req := holds.CreateRequest{EventID: e.ev.ID, IdempotencyKey: uuid.NewString()}
	for _, i := range seats {
		req.SeatIDs = append(req.SeatIDs, e.ev.Seats[i])
	}
	if ga > 0 {
		req.GeneralAdmission = []holds.GARequest{{SectionID: e.ev.GA, Quantity: ga}}
	}
	h, err := e.holds.Create(e.ctx, u, req)
	require.NoError(e.t, err)
	return h
}

// propertyOrder is one case of the state-machine properties: a new user
// orders the next of the event's seats and one GA unit (a fresh event, on
// which newEvent runs if not nil, when the seats run out); the payment is
// pending, and the hold is expired when rapid draws "holdExpired".
func (e *env) propertyOrder(rt *rapid.T, seat *int, newEvent func()) (u auth.User, o orders.Order, p orders.Payment, expired bool) {
	if *seat == len(e.ev.Seats) {
		e.ev = createEvent(e.t, e.pool)
		if newEvent != nil {
			newEvent()
		}
		*seat = 0
	}
	u = user("u-" + uuid.NewString()[:8])
	h := e.hold(u, []int{*seat}, 1)
	*seat++
	o, err := e.svc.Create(e.ctx, u, h.ID, "k")
	require.NoError(rt, err)
	p = e.payments(o.ID)[0]
	require.Equal(rt, orders.PaymentPending, p.Status)
	expired = rapid.Bool().Draw(rt, "holdExpired")
	if expired {
		e.expireHold(h.ID)
	}
	return u, o, p, expired
}

// stripeService is a service whose provider is Stripe, backed by a fake
// Stripe API (api), reconciling payments after reconcileAfter.
func (e *env) stripeService(reconcileAfter time.Duration) (*stripeAPI, *payments.Stripe, *orders.Service) {
	e.t.Helper()
	api := newStripeAPI()
	srv := httptest.NewServer(api)
	e.t.Cleanup(srv.Close)
	stripe := payments.NewStripe("sk_test_x", "whsec_x", payments.StripeBackends(srv.URL, srv.Client()))
	svc, err := orders.New(e.st, orders.Config{Provider: stripe, ProviderName: "stripe", PublicBaseURL: e.srv.URL,
		TicketKeys: ticketKeys, ReconcileAfter: reconcileAfter, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(e.t, err)
	return api, stripe, svc
}

// expireHold moves a hold's expiry into the past.
func (e *env) expireHold(holdID string) { fixtures.ExpireHold(e.t, e.pool, holdID) }

// pay settles a payment at paysim's hosted checkout as the buyer would.
func pay(t *testing.T, checkoutURL, outcome string) {
	t.Helper()
	resp, err := http.PostForm(checkoutURL, url.Values{"outcome": {outcome}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func (e *env) order(u auth.User, id string) orders.Order {
	e.t.Helper()
	o, err := e.svc.Get(e.ctx, u, id)
	require.NoError(e.t, err)
	return o
}

func (e *env) payments(orderID string) []orders.Payment {
	e.t.Helper()
	ps, err := e.svc.Payments(e.ctx, orderID)
	require.NoError(e.t, err)
	return ps
}

// lastPayment waits until the order's latest attempt has a checkout page.
func (e *env) lastPayment(orderID string) orders.Payment {
	e.t.Helper()
	var p orders.Payment
	require.Eventually(e.t, func() bool {
		ps := e.payments(orderID)
		p = ps[len(ps)-1]
		return p.CheckoutURL != nil
	}, 20*time.Second, 50*time.Millisecond)
	return p
}

func (e *env) waitOrder(u auth.User, id, status string) orders.Order {
	e.t.Helper()
	var o orders.Order
	require.Eventually(e.t, func() bool {
		o = e.order(u, id)
		return o.Status == status
	}, 30*time.Second, 50*time.Millisecond, "order %s never became %s", id, status)
	return o
}

func (e *env) waitPayment(orderID string, attempt int, status string) orders.Payment {
	e.t.Helper()
	var p orders.Payment
	require.Eventually(e.t, func() bool {
		ps := e.payments(orderID)
		if len(ps) < attempt {
			return false
		}
		p = ps[attempt-1]
		return p.Status == status
	}, 30*time.Second, 50*time.Millisecond, "payment %d of %s never became %s", attempt, orderID, status)
	return p
}

// count runs a counting query.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.pool.QueryRow(e.ctx, sql, args...).Scan(&n))
	return n
}

// auditClean runs the audit (with the provider) and requires no anomaly.
func (e *env) auditClean() {
	e.t.Helper()
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{Provider: e.sb})
	require.NoError(e.t, err)
	require.Empty(e.t, r.Anomalies, "audit: %+v", r.Anomalies)
	require.Equal(e.t, audit.Clean, r.Outcome(), "audit: unchecked %v", r.Unchecked)
}

// post sends a signed (or forged) notification to the webhook endpoint.
func (e *env) post(body []byte, sig string) int {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/webhooks/payments", bytes.NewReader(body))
	if sig != "" {
		req.Header.Set(payments.SignatureHeader, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	resp.Body.Close()
	return resp.StatusCode
}
