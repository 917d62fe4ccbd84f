package resolvers

import (
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/seatmap"
)

// sharedSnapshot is the snapshot as the GraphQL model, converted once per
// snapshot and shared by every request and subscriber it answers (never
// modify it).
func sharedSnapshot(s *seatmap.Snapshot) *model.SeatMap {
	if s == nil {
		return nil
	}
	return seatmap.Convert(s, toModelSnapshot)
}

func toModelSnapshot(s *seatmap.Snapshot) *model.SeatMap {
	return &model.SeatMap{EventID: s.EventID, Cursor: s.Cursor,
		Seats: toModelSeatMapSeats(s.Seats), GeneralAdmission: toModelGAStates(s.GeneralAdmission)}
}

// toModelSeatMapUpdate runs once per update, shared by every subscriber.
func toModelSeatMapUpdate(u *seatmap.Update) *model.SeatMapUpdate {
	return &model.SeatMapUpdate{EventID: u.EventID, Cursor: u.Cursor, Snapshot: sharedSnapshot(u.Snapshot),
		Seats: toModelSeatMapSeats(u.Seats), GeneralAdmission: toModelGAStates(u.GeneralAdmission)}
}

func toModelSeatMapSeats(xs []seatmap.Seat) []*model.SeatMapSeat {
	out := make([]*model.SeatMapSeat, len(xs))
	for i, x := range xs {
		out[i] = &model.SeatMapSeat{SeatID: x.SeatID, SectionID: x.SectionID, Status: model.SeatStatus(x.Status), Version: int(x.Version)}
	}
	return out
}

func toModelGAStates(xs []seatmap.GA) []*model.GeneralAdmissionState {
	out := make([]*model.GeneralAdmissionState, len(xs))
	for i, x := range xs {
		out[i] = &model.GeneralAdmissionState{SectionID: x.SectionID, Available: x.Available, Version: int(x.Version)}
	}
	return out
}
