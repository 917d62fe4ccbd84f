package seatmap

// View is a client's copy of a seat map, kept by applying updates in the
// order received: a change is applied only if its version is newer than the
// one held, so duplicates and replays are harmless. The web app does the
// same; tests and the benchmark use this one.
type View struct {
	Cursor string
	Seats  map[string]Seat
	GA     map[string]GA
}

// Apply applies an update (a snapshot replaces the map first) and returns
// how many seats and GA sections changed.
func (v *View) Apply(u *Update) int {
	if v.Seats == nil || u.Snapshot != nil {
		v.Seats, v.GA = map[string]Seat{}, map[string]GA{}
	}
	changed := 0
	if u.Snapshot != nil {
		for _, x := range u.Snapshot.Seats {
			v.Seats[x.SeatID] = x
		}
		for _, x := range u.Snapshot.GeneralAdmission {
			v.GA[x.SectionID] = x
		}
		changed = len(v.Seats) + len(v.GA)
	}
	for _, x := range u.Seats {
		if old, ok := v.Seats[x.SeatID]; !ok || x.Version > old.Version {
			v.Seats[x.SeatID] = x
			changed++
		}
	}
	for _, x := range u.GeneralAdmission {
		if old, ok := v.GA[x.SectionID]; !ok || x.Version > old.Version {
			v.GA[x.SectionID] = x
			changed++
		}
	}
	if u.Cursor != "" {
		v.Cursor = u.Cursor
	}
	return changed
}
