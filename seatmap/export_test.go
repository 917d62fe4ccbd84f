package seatmap

import "time"

// FeedTrusts reports whether Snapshot would now serve the event's
// projection on the change feed's word, without reading its stream
// (Service.current's second case): the feed read to its end within
// Refresh, the relay not behind, the projection not marked.
func (s *Service) FeedTrusts(eventID string) bool {
	s.projM.Lock()
	p := s.projs[eventID]
	s.projM.Unlock()
	_, ok := s.fedAt(time.Now())
	return ok && p != nil && p.cur.Load() != nil && !p.dirty.Load()
}
