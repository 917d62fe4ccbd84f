package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Behaviours of a buyer at checkout, drawn per buyer.
const (
	BPay         = "pay"           // pays at once
	BDeclineOnce = "decline_retry" // declined, retryPayment, pays
	BDeclineQuit = "decline_quit"  // declined, gives up: the hold expires
	BAbandon     = "abandon"       // never pays: the hold expires
	BLate        = "late"          // pays after the hold expired: refund
	BDouble      = "double"        // double-clicks createOrder and pay
	BCancel      = "cancel"        // cancels the first hold, holds again, pays
)

// behaviourMix is the cumulative share of each behaviour.
var behaviourMix = []struct {
	b string
	p float64
}{{BPay, .60}, {BDeclineOnce, .70}, {BDeclineQuit, .74}, {BAbandon, .82}, {BLate, .87}, {BDouble, .94}, {BCancel, 1}}

type queueTicket struct {
	Status               string  `json:"status"`
	Position             *int    `json:"position"`
	EstimatedWaitSeconds *int    `json:"estimatedWaitSeconds"`
	AdmissionToken       *string `json:"admissionToken"`
}

type holdResp struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expiresAt"`
	Items     []struct {
		Seat *struct {
			ID string `json:"id"`
		} `json:"seat"`
	} `json:"items"`
}

func (h holdResp) seats() []string {
	var out []string
	for _, it := range h.Items {
		if it.Seat != nil {
			out = append(out, it.Seat.ID)
		}
	}
	return out
}

type orderResp struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Payments []struct {
		ID          string  `json:"id"`
		Status      string  `json:"status"`
		CheckoutURL *string `json:"checkoutUrl"`
	} `json:"payments"`
}

// checkoutURL is the open attempt's hosted page, "" while unknown.
func (o orderResp) checkoutURL() string {
	if n := len(o.Payments); n > 0 && o.Payments[n-1].Status == "PENDING" && o.Payments[n-1].CheckoutURL != nil {
		return *o.Payments[n-1].CheckoutURL
	}
	return ""
}

func (o orderResp) lastPayment() string {
	if n := len(o.Payments); n > 0 {
		return o.Payments[n-1].Status
	}
	return ""
}

const orderFields = `id status payments { id status checkoutUrl }`

// buyer is one simulated person.
type buyer struct {
	r     *Run
	id    int
	user  string
	token string
	rng   *rand.Rand
	adm   string
	avoid map[string]bool
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retryable: answers that leave the outcome unknown or ask to come back.
func retryable(err error) bool {
	switch codeOf(err) {
	case "TRANSPORT", "SERVICE_UNAVAILABLE", "INTERNAL", "RATE_LIMITED":
		return true
	}
	return false
}

// crowdSteps are the waiting room's calls, sent on Client.Crowd.
var crowdSteps = map[string]bool{"joinQueue": true, "queueTicket": true, "leaveQueue": true}

// do runs a GraphQL call as a step, retrying the same request (same
// idempotency key) while the answer is unknown, up to tries times.
func (b *buyer) do(ctx context.Context, step string, tries int, q string, vars map[string]any, out any) error {
	var err error
	for i := 0; i < tries && ctx.Err() == nil; i++ {
		start := time.Now()
		if crowdSteps[step] {
			err = b.r.C.DoCrowd(ctx, b.token, q, vars, out)
		} else {
			err = b.r.C.Do(ctx, b.token, q, vars, out)
		}
		b.r.S.Observe(step, start, err)
		if !retryable(err) {
			return err
		}
		if !sleep(ctx, time.Duration(200*(1<<min(i, 4)))*time.Millisecond+time.Duration(b.rng.IntN(300))*time.Millisecond) {
			break
		}
	}
	return err
}

// run is the buyer's whole journey; it returns its outcome.
func (b *buyer) run(ctx context.Context) string {
	cfg := b.r.Cfg
	if !sleep(ctx, time.Duration(b.rng.Float64()*float64(cfg.Ramp))) {
		return "stopped"
	}
	if err := b.queue(ctx); err != nil {
		return "queue_failed"
	}
	b.r.admitted.Add(1)
	confirmed := false
	defer func() {
		if !confirmed {
			var out struct{ LeaveQueue bool }
			_ = b.do(context.WithoutCancel(ctx), "leaveQueue", 3, `mutation($e: ID!) { leaveQueue(eventId: $e) }`,
				map[string]any{"e": b.r.EventID}, &out)
		}
	}()
	if b.rng.Float64() < cfg.SnapshotFrac {
		start := time.Now()
		var out struct{ Event struct{ SeatMap seatMapSnap } }
		err := b.r.C.Do(ctx, "", `query($id: ID!) { event(id: $id) { seatMap { `+seatMapFields+` } } }`, map[string]any{"id": b.r.EventID}, &out)
		b.r.S.Observe("seatMap_snapshot", start, err)
	}
	beh := BPay
	x := b.rng.Float64()
	for _, m := range behaviourMix {
		if x < m.p {
			beh = m.b
			break
		}
	}
	b.r.S.Count("behaviour "+beh, 1)
	h, ok := b.hold(ctx)
	if !ok {
		return "no_seats"
	}
	if beh == BCancel {
		start := time.Now()
		var out struct{ CancelHold holdResp }
		err := b.do(ctx, "cancelHold", 4, `mutation($id: ID!) { cancelHold(id: $id) { id status } }`, map[string]any{"id": h.ID}, &out)
		res := ResOK
		if err != nil {
			res = ResFail
		}
		if err == nil || codeOf(err) == "HOLD_EXPIRED" {
			b.record(OpCancel, h.ID, h.seats(), start, res)
		}
		if h, ok = b.hold(ctx); !ok {
			return "no_seats"
		}
	}
	b.r.inCheckout.Add(1)
	defer b.r.inCheckout.Add(-1)
	out := b.checkout(ctx, h, beh)
	confirmed = out == "confirmed"
	return out
}

// queue joins the event's queue and waits for the admission token.
func (b *buyer) queue(ctx context.Context) error {
	const fields = `status position estimatedWaitSeconds admissionToken`
	start := time.Now()
	defer func() { b.r.S.Observe("time_in_queue", start, nil) }()
	join := func() (queueTicket, error) {
		var out struct{ JoinQueue queueTicket }
		err := b.do(ctx, "joinQueue", 1000, `mutation($e: ID!) { joinQueue(eventId: $e) { `+fields+` } }`, map[string]any{"e": b.r.EventID}, &out)
		return out.JoinQueue, err
	}
	t, err := join()
	b.r.joined.Add(1)
	for ctx.Err() == nil {
		if err == nil && t.Status == "ADMITTED" && t.AdmissionToken != nil {
			b.adm = *t.AdmissionToken
			return nil
		}
		// Wait on queueUpdates, as the web app's waiting room does: its
		// first message is the current place, then one per change.
		if err == nil && t.Status == "WAITING" {
			call := time.Now()
			var last queueTicket
			serr := b.subscribe(ctx, `subscription($e: ID!) { queueUpdates(eventId: $e) { `+fields+` } }`,
				map[string]any{"e": b.r.EventID}, func(data json.RawMessage) bool {
					var u struct{ QueueUpdates queueTicket }
					if json.Unmarshal(data, &u) != nil {
						return false
					}
					b.r.S.Count("queueUpdates messages", 1)
					last = u.QueueUpdates
					return last.Status != "WAITING"
				})
			if serr != errNoStream {
				b.r.S.Observe("queueUpdates", call, serr)
			}
			if serr == nil {
				t = last
				if t.Status == "EXPIRED" {
					b.r.S.Count("queue rejoins", 1)
					t, err = join()
				}
				continue
			}
			if ctx.Err() != nil {
				break
			}
			if serr != errNoStream {
				b.r.S.Count("queue stream fallbacks (polling)", 1)
			}
		}
		// The web app's fallback: read the place now and then.
		wait := 2 * time.Second
		if t.EstimatedWaitSeconds != nil {
			wait = min(max(time.Duration(*t.EstimatedWaitSeconds)*time.Second/2, 2*time.Second), 15*time.Second)
		}
		if !sleep(ctx, wait+time.Duration(b.rng.IntN(1000))*time.Millisecond) {
			break
		}
		var out struct{ QueueTicket *queueTicket }
		err = b.do(ctx, "queueTicket", 1000, `query($e: ID!) { queueTicket(eventId: $e) { `+fields+` } }`, map[string]any{"e": b.r.EventID}, &out)
		if err == nil && (out.QueueTicket == nil || out.QueueTicket.Status == "EXPIRED") {
			b.r.S.Count("queue rejoins", 1) // lost (Redis restart) or expired: back in line
			t, err = join()
			continue
		}
		if err == nil {
			t = *out.QueueTicket
		}
	}
	return ctx.Err()
}

// hold chooses from the live map and holds, retrying with another choice on
// SEAT_UNAVAILABLE, at most HoldAttempts times.
func (b *buyer) hold(ctx context.Context) (holdResp, bool) {
	cfg := b.r.Cfg
	qty := []int{1, 2, 2, 2, 3, 4}[b.rng.IntN(6)]
	for attempt := 0; attempt < cfg.HoldAttempts && ctx.Err() == nil; attempt++ {
		in := map[string]any{"eventId": b.r.EventID, "idempotencyKey": uuid.NewString(), "admissionToken": b.adm}
		var seats []string
		seatsLeft, gaLeft := b.r.Map.Counts()
		switch x := b.rng.Float64(); {
		case seatsLeft == 0 && gaLeft == 0 && attempt > 0:
			return holdResp{}, false
		case x < .3 && gaLeft >= qty:
			in["generalAdmission"] = []map[string]any{{"sectionId": b.r.Map.GASection(qty), "quantity": qty}}
		case x < .5 || seatsLeft < qty:
			in["bestAvailable"] = map[string]any{"quantity": qty}
		default:
			if seats = b.r.Map.Pick(b.rng, qty, b.avoid); seats == nil {
				in["bestAvailable"] = map[string]any{"quantity": qty}
			} else {
				in["seatIds"] = seats
			}
		}
		if gs, ok := in["generalAdmission"].([]map[string]any); ok && gs[0]["sectionId"] == "" {
			delete(in, "generalAdmission")
			in["bestAvailable"] = map[string]any{"quantity": qty}
		}
		start := time.Now()
		var out struct{ CreateHold holdResp }
		err := b.do(ctx, "createHold", 6, `mutation($in: CreateHoldInput!) { createHold(input: $in) { id status expiresAt items { seat { id } } } }`,
			map[string]any{"in": in}, &out)
		var g *gqlError
		switch {
		case err == nil:
			b.r.H.Add(opsFor(OpHold, out.CreateHold.ID, out.CreateHold.seats(), b.id, start, ResOK, out.CreateHold.ExpiresAt)...)
			return out.CreateHold, true
		case errors.As(err, &g) && g.Code() == "SEAT_UNAVAILABLE":
			b.r.S.Count("conflicts", 1)
			ids, _ := g.Extensions["unavailableSeatIds"].([]any)
			var taken []string
			for _, id := range ids {
				if s, ok := id.(string); ok && slices.Contains(seats, s) {
					taken = append(taken, s)
					b.avoid[s] = true
				}
			}
			b.r.H.Add(opsFor(OpHold, "", taken, b.id, start, ResConflict, time.Time{})...)
			if len(seats) > 0 {
				b.r.S.Count("conflicts explicit", 1)
			}
		case retryable(err) && len(seats) > 0:
			// Never answered: it may or may not have taken the seats.
			ops := opsFor(OpHold, "?"+in["idempotencyKey"].(string), seats, b.id, start, ResUnknown, time.Time{})
			for i := range ops {
				ops[i].Dur = b.r.HoldDuration
			}
			b.r.H.Add(ops...)
		case codeOf(err) == "QUEUE_ADMISSION_REQUIRED", codeOf(err) == "HOLD_LIMIT_EXCEEDED":
			return holdResp{}, false
		}
		sleep(ctx, time.Duration(100+b.rng.IntN(400))*time.Millisecond)
	}
	return holdResp{}, false
}

// opsFor is one op per seat; the return time is now.
func opsFor(kind, hold string, seats []string, buyer int, call time.Time, res string, exp time.Time) []Op {
	now := time.Now()
	out := make([]Op, 0, len(seats))
	for _, s := range seats {
		out = append(out, Op{Kind: kind, Seat: s, Hold: hold, Buyer: buyer, Call: call, Return: now, Result: res, ExpiresAt: exp})
	}
	return out
}

func (b *buyer) record(kind, hold string, seats []string, call time.Time, res string) {
	b.r.H.Add(opsFor(kind, hold, seats, b.id, call, res, time.Time{})...)
}

// createOrder creates (or replays) the order until its attempt has a
// checkout page or the order is final.
func (b *buyer) createOrder(ctx context.Context, h holdResp, key string) (orderResp, error) {
	var o orderResp
	for ctx.Err() == nil {
		var out struct{ CreateOrder orderResp }
		err := b.do(ctx, "createOrder", 8, `mutation($h: ID!, $k: String!) { createOrder(input: {holdId: $h, idempotencyKey: $k}) { `+orderFields+` } }`,
			map[string]any{"h": h.ID, "k": key}, &out)
		if err != nil {
			return o, err
		}
		o = out.CreateOrder
		if o.checkoutURL() != "" || o.Status != "AWAITING_PAYMENT" || time.Now().After(h.ExpiresAt) {
			return o, nil
		}
		b.r.S.Count("createOrder replays (attempt UNKNOWN)", 1)
		sleep(ctx, 2*time.Second)
	}
	return o, ctx.Err()
}

// pay settles the open attempt at the provider's hosted page.
func (b *buyer) pay(ctx context.Context, checkoutURL, outcome string) {
	for i := 0; i < 5 && ctx.Err() == nil; i++ {
		start := time.Now()
		code, err := b.r.C.PostForm(ctx, checkoutURL, url.Values{"outcome": {outcome}})
		if err == nil && code >= 500 {
			err = fmt.Errorf("HTTP %d", code)
		}
		b.r.S.Observe("checkout_post", start, err)
		if err == nil {
			if code == 409 {
				b.r.S.Count("checkout 409 (not pending)", 1)
			}
			return
		}
		sleep(ctx, time.Second)
	}
}

// poll waits for the order to satisfy pred, until the deadline: on
// orderUpdates, as the web app does (the read's window is from the
// subscription's start to the message: the state was current somewhere in
// it), and by reading the order now and then when the stream fails.
func (b *buyer) poll(ctx context.Context, orderID string, deadline time.Time, pred func(orderResp) bool) (orderResp, time.Time, time.Time, bool) {
	if time.Now().Before(deadline) {
		sctx, cancel := context.WithDeadline(ctx, deadline)
		call := time.Now()
		var got orderResp
		err := b.subscribe(sctx, `subscription($id: ID!) { orderUpdates(orderId: $id) { `+orderFields+` } }`,
			map[string]any{"id": orderID}, func(data json.RawMessage) bool {
				var u struct{ OrderUpdates *orderResp }
				if json.Unmarshal(data, &u) != nil || u.OrderUpdates == nil {
					return false
				}
				b.r.S.Count("orderUpdates messages", 1)
				got = *u.OrderUpdates
				return pred(got)
			})
		cancel()
		if err != errNoStream {
			b.r.S.Observe("orderUpdates", call, err)
		}
		if err == nil {
			return got, call, time.Now(), true
		}
		if err != errNoStream && ctx.Err() == nil && time.Now().Before(deadline) {
			b.r.S.Count("order stream fallbacks (polling)", 1)
		}
	}
	for ctx.Err() == nil && time.Now().Before(deadline) {
		call := time.Now()
		var out struct{ Order *orderResp }
		err := b.do(ctx, "order_poll", 1, `query($id: ID!) { order(id: $id) { `+orderFields+` } }`, map[string]any{"id": orderID}, &out)
		if err == nil && out.Order != nil && pred(*out.Order) {
			return *out.Order, call, time.Now(), true
		}
		sleep(ctx, b.r.Cfg.PollEvery+time.Duration(b.rng.IntN(500))*time.Millisecond)
	}
	return orderResp{}, time.Time{}, time.Time{}, false
}

func final(o orderResp) bool {
	return o.Status == "CONFIRMED" || o.Status == "EXPIRED" || o.Status == "CANCELLED"
}

// checkout creates the order, pays as the behaviour says and waits for the
// order's final state.
func (b *buyer) checkout(ctx context.Context, h holdResp, beh string) string {
	start := time.Now()
	key := uuid.NewString()
	var o orderResp
	var err error
	if beh == BDouble {
		var wg sync.WaitGroup
		var o2 orderResp
		wg.Add(2)
		go func() { defer wg.Done(); o, err = b.createOrder(ctx, h, key) }()
		go func() { defer wg.Done(); o2, _ = b.createOrder(ctx, h, key) }()
		wg.Wait()
		if err == nil && o2.ID != "" && o2.ID != o.ID {
			b.r.S.Count("ANOMALY double createOrder gave two orders", 1)
		}
	} else {
		o, err = b.createOrder(ctx, h, key)
	}
	if err != nil {
		return "order_failed"
	}
	b.r.ordersCreated.Add(1)
	var payCall time.Time // the first succeed submitted: the earliest a confirmation can happen
	succeed := func(u string) {
		if u == "" {
			return
		}
		if payCall.IsZero() {
			payCall = time.Now()
		}
		if beh == BDouble {
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); b.pay(ctx, u, "succeed") }()
			go func() { defer wg.Done(); b.pay(ctx, u, "succeed") }()
			wg.Wait()
			return
		}
		b.pay(ctx, u, "succeed")
	}
	think := func() { sleep(ctx, time.Duration(b.rng.Float64()*float64(b.r.Cfg.Think))) }
	settleBy := h.ExpiresAt.Add(b.r.Cfg.OrderSettle)
	switch beh {
	case BPay, BDouble, BCancel:
		think()
		succeed(o.checkoutURL())
	case BDeclineOnce, BDeclineQuit:
		think()
		if u := o.checkoutURL(); u != "" {
			b.pay(ctx, u, "decline")
		}
		if beh == BDeclineOnce {
			f, _, _, ok := b.poll(ctx, o.ID, h.ExpiresAt, func(o orderResp) bool { return final(o) || o.lastPayment() == "FAILED" })
			if ok && !final(f) {
				var out struct{ RetryPayment orderResp }
				rkey := uuid.NewString()
				for i := 0; i < 10 && time.Now().Before(h.ExpiresAt); i++ {
					err := b.do(ctx, "retryPayment", 6, `mutation($o: ID!, $k: String!) { retryPayment(orderId: $o, idempotencyKey: $k) { `+orderFields+` } }`,
						map[string]any{"o": o.ID, "k": rkey}, &out)
					if err != nil || out.RetryPayment.checkoutURL() != "" {
						break
					}
					sleep(ctx, 2*time.Second) // attempt UNKNOWN: replay the same key
				}
				succeed(out.RetryPayment.checkoutURL())
			}
		}
	case BLate:
		if sleep(ctx, time.Until(h.ExpiresAt)+time.Second) {
			succeed(o.checkoutURL())
		}
	case BAbandon:
	}
	f, call, ret, ok := b.poll(ctx, o.ID, settleBy, final)
	b.r.S.Observe("checkout_duration", start, nil)
	if !ok {
		b.r.S.Count("orders unsettled at the buyer's deadline", 1)
		return "unsettled"
	}
	switch {
	case !payCall.IsZero():
		res := ResOK
		if f.Status != "CONFIRMED" {
			res = ResFail
		}
		b.record(OpConfirm, h.ID, h.seats(), payCall, res)
	case f.Status == "CONFIRMED":
		b.r.S.Count("ANOMALY confirmed without a payment submitted", 1)
		b.record(OpConfirm, h.ID, h.seats(), call, ResOK)
	default:
		b.r.H.Add(func() []Op {
			ops := opsFor(OpExpired, h.ID, h.seats(), b.id, call, ResOK, time.Time{})
			for i := range ops {
				ops[i].Return = ret
			}
			return ops
		}()...)
	}
	if f.Status == "CONFIRMED" {
		b.r.S.Count("tickets sold", len(h.Items))
		b.r.S.Count("seats sold", len(h.seats()))
		return "confirmed"
	}
	return "expired"
}
