package paysim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// SignatureHeader carries a notification's signature.
const SignatureHeader = "Paysim-Signature"

// sign returns the Paysim-Signature value of body at t:
// "t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">".
func sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// Run is the background worker: it settles auto_outcome payments when due
// and delivers notifications from the outbox, until ctx ends. Several
// instances may run on one database; rows are claimed with FOR UPDATE SKIP
// LOCKED, and a claimed delivery is leased (its next attempt pushed past
// the attempt's timeout), so an instance that dies mid-attempt only delays it.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.opt.PollInterval)
	defer t.Stop()
	defer s.sending.Wait()
	for {
		s.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.wake:
		}
	}
}

const batchSize = 20

func (s *Server) tick(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := s.settleDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("paysim: auto settle", "err", err)
		}
		if err != nil || n < batchSize {
			break
		}
	}
	for ctx.Err() == nil {
		n, err := s.deliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("paysim: deliver", "err", err)
		}
		if err != nil || n == 0 {
			break
		}
	}
}

// settleDue settles the pending payments whose auto_outcome is due.
func (s *Server) settleDue(ctx context.Context) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `SELECT id, auto_outcome FROM paysim.payments
		WHERE status = 'pending' AND settle_at <= now()
		ORDER BY settle_at LIMIT $1 FOR UPDATE SKIP LOCKED`, batchSize)
	if err != nil {
		return 0, err
	}
	type due struct{ id, outcome string }
	var list []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.outcome); err != nil {
			return 0, err
		}
		list = append(list, d)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, d := range list {
		p, err := lockPayment(ctx, tx, d.id)
		if err != nil {
			return 0, err
		}
		if _, _, err := s.settleTx(ctx, tx, p, d.outcome); err != nil {
			return 0, err
		}
	}
	return len(list), tx.Commit(ctx)
}

type delivery struct {
	id       int64
	url      string
	attempts int
	eventID  string
	payment  string
	body     []byte
	dueAt    time.Time
}

// deliveryConcurrency is how many payments' notifications are delivered
// at once: a real provider does not send one webhook at a time (one at a
// time capped a sale's confirmations at ~15/s per paysim), and the product
// must take them concurrently and out of order anyway. One payment's
// notifications still go one after the other, in due order.
const deliveryConcurrency = 32

// deliverDue claims due deliveries, as many as there are free delivery
// slots, of payments this instance is not sending to already, and starts
// them: one goroutine per payment, sending its notifications in due order
// and recording each result. It does not wait for them (a slow answer
// does not hold back the next claim); a finished one wakes the worker. It
// returns how many it claimed.
func (s *Server) deliverDue(ctx context.Context) (int, error) {
	s.flightMu.Lock()
	free := deliveryConcurrency - len(s.flight)
	busy := make([]string, 0, len(s.flight))
	for p := range s.flight {
		busy = append(busy, p)
	}
	s.flightMu.Unlock()
	if free <= 0 {
		return 0, nil
	}
	lease := (s.opt.DeliveryTimeout + 5*time.Second).Milliseconds()
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT d.id, d.next_attempt_at FROM paysim.deliveries d
			JOIN paysim.events e ON e.id = d.event_id
			WHERE d.delivered_at IS NULL AND d.gave_up_at IS NULL AND d.next_attempt_at <= now()
			  AND e.payment_id <> ALL($3::text[])
			ORDER BY d.next_attempt_at, d.id LIMIT $2
			FOR UPDATE OF d SKIP LOCKED)
		UPDATE paysim.deliveries d
		SET attempts = d.attempts + 1, next_attempt_at = now() + $1 * interval '1 millisecond'
		FROM due, paysim.events e
		WHERE d.id = due.id AND e.id = d.event_id
		RETURNING d.id, d.url, d.attempts, e.id, e.payment_id, e.body, due.next_attempt_at`, lease, free, busy)
	if err != nil {
		return 0, err
	}
	var list []delivery
	for rows.Next() {
		var d delivery
		if err := rows.Scan(&d.id, &d.url, &d.attempts, &d.eventID, &d.payment, &d.body, &d.dueAt); err != nil {
			rows.Close()
			return 0, err
		}
		list = append(list, d)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].dueAt.Equal(list[j].dueAt) {
			return list[i].dueAt.Before(list[j].dueAt)
		}
		return list[i].id < list[j].id
	})
	var order []string
	byPayment := map[string][]delivery{}
	for _, d := range list {
		if byPayment[d.payment] == nil {
			order = append(order, d.payment)
		}
		byPayment[d.payment] = append(byPayment[d.payment], d)
	}
	s.flightMu.Lock()
	for _, p := range order {
		s.flight[p] = true
	}
	s.flightMu.Unlock()
	for _, p := range order {
		s.sending.Go(func() {
			defer func() {
				s.flightMu.Lock()
				delete(s.flight, p)
				s.flightMu.Unlock()
				s.notify()
			}()
			for _, d := range byPayment[p] {
				if ctx.Err() != nil {
					return // the lease runs out and another attempt follows
				}
				sent := time.Now()
				status, err := s.attempt(ctx, d)
				if err := s.record(context.WithoutCancel(ctx), d, sent, status, err); err != nil {
					if ctx.Err() == nil {
						s.log.Error("paysim: record delivery", "err", err)
					}
					return
				}
			}
		})
	}
	return len(list), nil
}

// attempt POSTs one copy of an event, freshly signed.
func (s *Server) attempt(ctx context.Context, d delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opt.DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "paysim/1.0")
	req.Header.Set(SignatureHeader, sign(s.opt.WebhookSecret, time.Now(), d.body))
	req.Header.Set("Paysim-Delivery-Attempt", strconv.Itoa(d.attempts))
	resp, err := s.opt.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// record stores an attempt's result (sent: when its POST started):
// delivered, retried later with backoff, or given up after MaxAttempts or
// MaxAge.
func (s *Server) record(ctx context.Context, d delivery, sent time.Time, status int, err error) error {
	var st *int
	if status != 0 {
		st = &status
	}
	if err == nil {
		s.metrics.attempts.WithLabelValues("delivered").Inc()
		_, err := s.pool.Exec(ctx, `UPDATE paysim.deliveries
			SET delivered_at = now(), sent_at = $3, last_status = $2, last_error = '' WHERE id = $1`, d.id, st, sent)
		return err
	}
	s.metrics.attempts.WithLabelValues("failed").Inc()
	s.log.Info("paysim: webhook delivery failed", "event", d.eventID, "url", d.url, "attempt", d.attempts, "err", err)
	_, err = s.pool.Exec(ctx, `UPDATE paysim.deliveries
		SET last_status = $2, last_error = $3, sent_at = $7,
			gave_up_at = CASE WHEN attempts >= $4 OR created_at < now() - $5 * interval '1 millisecond' THEN now() END,
			next_attempt_at = now() + $6 * interval '1 millisecond'
		WHERE id = $1`, d.id, st, err.Error(), s.opt.MaxAttempts, s.opt.MaxAge.Milliseconds(),
		s.backoff(d.attempts).Milliseconds(), sent)
	return err
}

// backoff is the delay after failed attempt n (1-based): exponential,
// capped, with a random half as jitter.
func (s *Server) backoff(n int) time.Duration {
	d := s.opt.BackoffBase
	for i := 1; i < n && d < s.opt.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.opt.BackoffMax)
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}
