package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// at is t0 + ms milliseconds.
var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func hold(buyer int, h string, call, ret, exp int) Op {
	return Op{Kind: OpHold, Seat: "s1", Hold: h, Buyer: buyer, Call: at(call), Return: at(ret), Result: ResOK, ExpiresAt: at(exp)}
}

func op(kind, h, res string, buyer, call, ret int) Op {
	return Op{Kind: kind, Seat: "s1", Hold: h, Buyer: buyer, Call: at(call), Return: at(ret), Result: res}
}

func check(t *testing.T, c Checker, ops ...Op) CheckResult {
	t.Helper()
	return c.Check(ops, 10*time.Second, "")
}

func TestCheckerAcceptsLegalHistories(t *testing.T) {
	c := Checker{StrictConflicts: true}
	cases := map[string][]Op{
		"hold, conflict, confirm": {
			hold(1, "h1", 0, 10, 1000),
			op(OpHold, "x", ResConflict, 2, 5, 20),
			op(OpConfirm, "h1", ResOK, 1, 100, 200),
			op(OpHold, "y", ResConflict, 3, 5000, 5010),
		},
		"expiry then a new hold, the late confirm fails": {
			hold(1, "h1", 0, 10, 1000),
			op(OpConfirm, "h1", ResFail, 1, 900, 3000),
			hold(2, "h2", 1000, 1010, 2000),
			op(OpConfirm, "h2", ResOK, 2, 1100, 1500),
		},
		"concurrent holds, one wins": {
			hold(1, "h1", 0, 50, 1040),
			op(OpHold, "x", ResConflict, 2, 0, 50),
		},
		"cancel frees the seat": {
			hold(1, "h1", 0, 10, 1000),
			op(OpCancel, "h1", ResOK, 1, 20, 30),
			hold(2, "h2", 40, 50, 1045),
			op(OpExpired, "h2", ResOK, 2, 1040, 1100),
		},
		"unknown hold result may or may not have happened": {
			{Kind: OpHold, Seat: "s1", Hold: "?k", Buyer: 1, Call: at(0), Return: at(50), Result: ResUnknown, Dur: time.Second},
			hold(2, "h2", 60, 70, 1065),
		},
	}
	for name, ops := range cases {
		t.Run(name, func(t *testing.T) {
			r := check(t, c, ops...)
			require.Empty(t, r.Illegal)
			require.Empty(t, r.Unknown)
		})
	}
}

// A checker that cannot fail is worthless: planted illegal histories.
func TestCheckerRejectsIllegalHistories(t *testing.T) {
	c := Checker{}
	cases := map[string][]Op{
		"two successful holds overlapping on one seat": {
			hold(1, "h1", 0, 10, 1000),
			hold(2, "h2", 20, 30, 1025),
		},
		"a confirm after another hold took the seat": {
			hold(1, "h1", 0, 10, 1000),
			hold(2, "h2", 1100, 1110, 2100),
			op(OpConfirm, "h1", ResOK, 1, 1200, 1300),
		},
		"a seat sold twice": {
			hold(1, "h1", 0, 10, 1000),
			op(OpConfirm, "h1", ResOK, 1, 20, 30),
			hold(2, "h2", 2000, 2010, 3000),
		},
		"an order expired while its hold was still in force": {
			hold(1, "h1", 0, 10, 1000),
			op(OpExpired, "h1", ResOK, 1, 100, 200),
		},
		"a confirm after the hold was cancelled": {
			hold(1, "h1", 0, 10, 1000),
			op(OpCancel, "h1", ResOK, 1, 20, 30),
			op(OpConfirm, "h1", ResOK, 1, 40, 50),
		},
		"a hold while a concurrent unknown hold may only have been granted before": {
			hold(1, "h1", 0, 10, 1000),
			{Kind: OpHold, Seat: "s1", Hold: "?k", Buyer: 2, Call: at(20), Return: at(30), Result: ResUnknown, Dur: time.Second},
			op(OpConfirm, "h1", ResOK, 1, 40, 50),
			hold(3, "h3", 1500, 1510, 2500),
		},
	}
	for name, ops := range cases {
		t.Run(name, func(t *testing.T) {
			r := check(t, c, ops...)
			require.Equal(t, []string{"s1"}, r.Illegal)
		})
	}
	// Strict conflicts: a conflict on a free seat is not explained.
	r := check(t, Checker{StrictConflicts: true}, op(OpHold, "x", ResConflict, 1, 0, 10))
	require.Equal(t, []string{"s1"}, r.Illegal)
}
