package seatmap

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/ticketing/ticketing/outbox"
)

// entry is the content of one stream entry (field "u").
type entry struct {
	Seats []Seat `json:"seats,omitempty"`
	GA    []GA   `json:"ga,omitempty"`
}

// Publish is the outbox sink of the seat map: it turns the batch's
// inventory rows into one stream entry per event (GA sections recounted from
// Postgres now, after the rows' commit), wakes the hubs of every instance,
// then names the events in the change feed (feed.go).
// Rows of other topics are ignored. Publishing a batch twice is harmless.
func (s *Service) Publish(ctx context.Context, rows []outbox.Row) error {
	type pending struct {
		merge      merger
		gaSections []string
		seenGA     map[string]bool
	}
	byEvent := map[string]*pending{}
	var order []string
	for _, r := range rows {
		if r.Topic != outbox.TopicInventory {
			continue
		}
		var p outbox.InventoryChange // written by holds and orders with the change
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			s.log.Error("seat map: bad outbox payload, skipped", "id", r.ID, "err", err)
			continue
		}
		ev := p.EventID
		if r.EventID != nil {
			ev = *r.EventID
		}
		if ev == "" {
			continue
		}
		e := byEvent[ev]
		if e == nil {
			e = &pending{seenGA: map[string]bool{}}
			byEvent[ev] = e
			order = append(order, ev)
		}
		e.merge.seats(p.Seats, nil)
		for _, g := range p.GA {
			if !e.seenGA[g.SectionID] {
				e.seenGA[g.SectionID] = true
				e.gaSections = append(e.gaSections, g.SectionID)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	for _, ev := range order {
		e := byEvent[ev]
		if len(e.gaSections) > 0 {
			counts, err := s.st.SeatMapGA(ctx, ev, e.gaSections)
			if err != nil {
				return err
			}
			for _, c := range counts {
				e.merge.ga([]GA{GA(c)}, nil)
			}
		}
		b, err := json.Marshal(entry{Seats: e.merge.seatList, GA: e.merge.gaList})
		if err != nil {
			return err
		}
		pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: s.streamKey(ev), MaxLen: s.cfg.MaxLen, Approx: true,
			Values: []any{"u", b},
		})
		pipe.SPublish(ctx, s.channel(ev), "")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("seat map publish: %w", err)
	}
	// Only now: a reader of the feed finds these entries in the streams
	// (feed.go). On failure the relay publishes the batch again.
	if err := s.appendFeed(ctx, order); err != nil {
		return fmt.Errorf("seat map publish: change feed: %w", err)
	}
	s.m.published.Add(float64(len(order)))
	return nil
}

// merger gathers seat and GA states, keeping the newest version of each.
// With a non-nil seen map it also drops states not newer than seen (and
// records what it keeps there).
type merger struct {
	seatIdx  map[string]int
	seatList []Seat
	gaIdx    map[string]int
	gaList   []GA
}

func (m *merger) seats(xs []Seat, seen map[string]int64) {
	if m.seatIdx == nil {
		m.seatIdx = map[string]int{}
	}
	for _, x := range xs {
		if seen != nil {
			if v, ok := seen[x.SeatID]; ok && v >= x.Version {
				continue
			}
			seen[x.SeatID] = x.Version
		}
		if i, ok := m.seatIdx[x.SeatID]; ok {
			if x.Version > m.seatList[i].Version {
				m.seatList[i] = x
			}
			continue
		}
		m.seatIdx[x.SeatID] = len(m.seatList)
		m.seatList = append(m.seatList, x)
	}
}

func (m *merger) ga(xs []GA, seen map[string]int64) {
	if m.gaIdx == nil {
		m.gaIdx = map[string]int{}
	}
	for _, x := range xs {
		if seen != nil {
			if v, ok := seen[x.SectionID]; ok && v >= x.Version {
				continue
			}
			seen[x.SectionID] = x.Version
		}
		if i, ok := m.gaIdx[x.SectionID]; ok {
			if x.Version > m.gaList[i].Version {
				m.gaList[i] = x
			}
			continue
		}
		m.gaIdx[x.SectionID] = len(m.gaList)
		m.gaList = append(m.gaList, x)
	}
}

// add merges a stream entry.
func (m *merger) add(msg redis.XMessage, seenSeats, seenGA map[string]int64) {
	raw, _ := msg.Values["u"].(string)
	var e entry
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return
	}
	m.seats(e.Seats, seenSeats)
	m.ga(e.GA, seenGA)
}

// update returns the merged states as an Update (empty slices, never nil).
func (m *merger) update(eventID, cursor string) *Update {
	u := &Update{EventID: eventID, Cursor: cursor, Seats: m.seatList, GeneralAdmission: m.gaList}
	if u.Seats == nil {
		u.Seats = []Seat{}
	}
	if u.GeneralAdmission == nil {
		u.GeneralAdmission = []GA{}
	}
	return u
}
