package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op kinds recorded per seat. A multi-seat hold, cancel or order is recorded
// once per seat (each seat is its own register).
const (
	OpHold    = "hold"    // createHold: ok (ExpiresAt) | conflict | unknown
	OpCancel  = "cancel"  // cancelHold: ok | fail (HOLD_EXPIRED)
	OpConfirm = "confirm" // a paid order: ok (CONFIRMED) | fail (EXPIRED)
	OpExpired = "expired" // an order seen EXPIRED without a successful payment attempt
)

// Results.
const (
	ResOK       = "ok"
	ResConflict = "conflict"
	ResFail     = "fail"
	ResUnknown  = "unknown"
)

// Op is one observed operation on one seat: the client's invoke and return
// times (same host, same clock as the database) and the result. For a hold
// with an unknown result, Hold is "?" + the idempotency key and Dur the
// event's hold duration (its expiry lies in [Call+Dur, Return+Dur]).
type Op struct {
	Kind      string    `json:"kind"`
	Seat      string    `json:"seat"`
	Hold      string    `json:"hold"`
	Buyer     int       `json:"buyer"`
	Call      time.Time `json:"call"`
	Return    time.Time `json:"return"`
	Result    string    `json:"result"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Dur       time.Duration
}

// History collects the ops of a run, safe for concurrent use.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records ops.
func (h *History) Add(ops ...Op) {
	h.mu.Lock()
	h.ops = append(h.ops, ops...)
	h.mu.Unlock()
}

// Ops returns a copy of the recorded ops.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// seat states
const (
	free = iota
	held
	sold
)

// seatState is the model's state of one seat. ExpLo/ExpHi bound the expiry of
// the current hold (equal when the server told us expiresAt). Now is the
// earliest instant the last linearized op can have taken effect: each op
// takes effect at one instant inside [Call, Return], and those instants grow
// along the linearization; choosing each one as early as the constraints
// allow is optimal, because all constraints are bounds on that instant.
type seatState struct {
	Status       int
	Hold         string
	ExpLo, ExpHi int64
	Now          int64
}

// Checker checks per-seat histories against the seat model.
type Checker struct {
	// Slack widens expiry comparisons (clock reading granularity).
	Slack time.Duration
	// StrictConflicts requires a conflict to be explained by the seat being
	// held or sold at some instant of the call. Off, a conflict is accepted
	// as a spurious (safe) refusal: the Redis lease of a concurrent attempt
	// that later failed answers SEAT_UNAVAILABLE by design.
	StrictConflicts bool
}

// step is the nondeterministic seat model: the possible states after op.
func (c Checker) step(s seatState, op Op) []seatState {
	slack := int64(c.Slack)
	t := max(s.Now, op.Call.UnixNano())
	ret := op.Return.UnixNano()
	if t > ret {
		return nil
	}
	// at moves the effect instant to at least lo; ok if still inside the call.
	at := func(lo int64) (int64, bool) { t2 := max(t, lo); return t2, t2 <= ret }
	validAt := func(h string) bool { return s.Status == held && s.Hold == h && t < s.ExpHi+slack }
	take := func(h string, lo, hi int64) []seatState {
		switch s.Status {
		case sold:
			return nil
		case held:
			t2, ok := at(s.ExpLo - slack)
			if !ok {
				return nil
			}
			return []seatState{{Status: held, Hold: h, ExpLo: lo, ExpHi: hi, Now: t2}}
		}
		return []seatState{{Status: held, Hold: h, ExpLo: lo, ExpHi: hi, Now: t}}
	}
	same := s
	same.Now = t
	switch op.Kind {
	case OpHold:
		switch op.Result {
		case ResOK:
			e := op.ExpiresAt.UnixNano()
			return take(op.Hold, e, e)
		case ResConflict:
			if !c.StrictConflicts || s.Status == sold || (s.Status == held && t < s.ExpHi+slack) {
				return []seatState{same}
			}
			return nil
		case ResUnknown:
			return append([]seatState{same}, take(op.Hold, op.Call.Add(op.Dur).UnixNano(), op.Return.Add(op.Dur).UnixNano())...)
		}
	case OpCancel, OpConfirm:
		if op.Result == ResOK {
			if !validAt(op.Hold) {
				return nil
			}
			n := same
			if op.Kind == OpCancel {
				n.Status, n.Hold = free, ""
			} else {
				n.Status = sold
			}
			return []seatState{n}
		}
		fallthrough
	case OpExpired:
		// The hold must not be in force at the effect instant.
		if s.Status == sold && s.Hold == op.Hold {
			return nil
		}
		if s.Status == held && s.Hold == op.Hold {
			t2, ok := at(s.ExpLo - slack)
			if !ok {
				return nil
			}
			same.Now = t2
		}
		return []seatState{same}
	}
	return nil
}

// Model returns the porcupine model of one seat.
func (c Checker) Model() porcupine.Model {
	nm := &porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{seatState{}} },
		Step: func(state, input, _ interface{}) []interface{} {
			var out []interface{}
			for _, n := range c.step(state.(seatState), input.(Op)) {
				out = append(out, n)
			}
			return out
		},
		Equal: func(a, b interface{}) bool { return a.(seatState) == b.(seatState) },
		DescribeOperation: func(in, _ interface{}) string {
			op := in.(Op)
			s := fmt.Sprintf("%s(%s) -> %s", op.Kind, short(op.Hold), op.Result)
			if !op.ExpiresAt.IsZero() {
				s += " until " + op.ExpiresAt.Format("15:04:05.000")
			}
			return s
		},
		DescribeState: func(st interface{}) string {
			s := st.(seatState)
			return fmt.Sprintf("%s %s exp %s", [...]string{"free", "held", "sold"}[s.Status], short(s.Hold),
				time.Unix(0, s.ExpHi).Format("15:04:05.000"))
		},
	}
	return nm.ToModel()
}

func short(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

// CheckResult is the outcome of checking a whole run.
type CheckResult struct {
	Seats, Ops int
	// Illegal lists the seats whose history has no legal order; Unknown
	// those the checker could not decide within its time budget.
	Illegal, Unknown []string
}

// Check checks each seat's history (ops grouped by seat). When dir is set,
// a porcupine visualization of each illegal seat is written there.
func (c Checker) Check(ops []Op, timeout time.Duration, dir string) CheckResult {
	bySeat := map[string][]porcupine.Operation{}
	for _, op := range ops {
		bySeat[op.Seat] = append(bySeat[op.Seat], porcupine.Operation{
			ClientId: op.Buyer, Input: op, Call: op.Call.UnixNano(), Return: op.Return.UnixNano(),
		})
	}
	seats := make([]string, 0, len(bySeat))
	for s := range bySeat {
		seats = append(seats, s)
	}
	sort.Strings(seats)
	r := CheckResult{Seats: len(seats), Ops: len(ops)}
	m := c.Model()
	for _, s := range seats {
		res, info := porcupine.CheckOperationsVerbose(m, bySeat[s], timeout)
		switch res {
		case porcupine.Illegal:
			r.Illegal = append(r.Illegal, s)
			if dir != "" && len(r.Illegal) <= 5 {
				_ = porcupine.VisualizePath(m, info, filepath.Join(dir, "linearizability-"+s+".html"))
			}
		case porcupine.Unknown:
			r.Unknown = append(r.Unknown, s)
		}
	}
	return r
}

// WriteJSON saves the history (one JSON array) for later inspection.
func WriteJSON(path string, ops []Op) error {
	b, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
