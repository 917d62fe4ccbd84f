package catalog

import (
	"math"

	"github.com/ticketing/ticketing/store"
)

// Default drawing parameters, in venue units.
const (
	DefaultSeatSpacing = 10.0
	DefaultRowSpacing  = 12.0
	// stageGap is the distance between the stage (y = 0) and the first
	// automatically placed section; sectionGap separates sections side by side.
	stageGap   = 30.0
	sectionGap = 20.0
)

type point struct{ x, y float64 }

// rect is an axis-aligned box being grown around points.
type rect struct{ minX, minY, maxX, maxY float64 }

func emptyRect() rect {
	return rect{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
}

func (r *rect) add(p point) {
	r.minX, r.maxX = min(r.minX, p.x), max(r.maxX, p.x)
	r.minY, r.maxY = min(r.minY, p.y), max(r.maxY, p.y)
}

func (r rect) pad(dx, dy float64) rect {
	return rect{r.minX - dx, r.minY - dy, r.maxX + dx, r.maxY + dy}
}

// Rect is the section bounds (x, y, width, height) of the box.
func (r rect) bounds() Rect {
	return Rect{X: r.minX, Y: r.minY, Width: r.maxX - r.minX, Height: r.maxY - r.minY}
}

// place rotates the local point (lx, ly) by deg around the origin and moves
// it to (ox, oy).
func place(lx, ly, deg, ox, oy float64) point {
	s, c := math.Sincos(deg * math.Pi / 180)
	return point{ox + lx*c - ly*s, oy + lx*s + ly*c}
}

func spacings(l Layout) (seat, row float64) {
	seat, row = l.SeatSpacing, l.RowSpacing
	if seat == 0 {
		seat = DefaultSeatSpacing
	}
	if row == 0 {
		row = DefaultRowSpacing
	}
	return seat, row
}

// seatPositions draws the rows of a SEATED section: rows front to back in +y
// (before rotation), each row centred on the widest one, bent by l.Curve
// (the middle of a row lies Curve units further from the stage than its
// ends). It returns one point per seat, row by row, and the section bounds
// (the seats' box padded by half a spacing).
func seatPositions(rows []RowInput, l Layout) ([][]point, rect) {
	ss, rs := spacings(l)
	widest := 0
	for _, r := range rows {
		widest = max(widest, r.Seats)
	}
	width := float64(widest-1) * ss
	box := emptyRect()
	out := make([][]point, len(rows))
	for i, r := range rows {
		off := float64(widest-r.Seats) * ss / 2
		out[i] = make([]point, r.Seats)
		for n := range r.Seats {
			lx := off + float64(n)*ss
			ly := float64(i) * rs
			if l.Curve != 0 && width > 0 {
				u := (lx - width/2) / (width / 2)
				ly += l.Curve * (1 - u*u)
			}
			p := place(lx, ly, l.Angle, l.X, l.Y)
			out[i][n] = p
			box.add(p)
		}
	}
	return out, box.pad(ss/2, rs/2)
}

// gaSize is the drawn size of a general-admission area: the given width and
// height, or a 3:2 box whose area grows with the capacity.
func gaSize(capacity int, l Layout) (w, h float64) {
	w, h = l.Width, l.Height
	side := math.Max(40, math.Sqrt(float64(capacity))*3)
	switch {
	case w == 0 && h == 0:
		w, h = side*1.5, side/1.5
	case w == 0:
		w = side * side / h
	case h == 0:
		h = side * side / w
	}
	return w, h
}

// gaBounds is the box of a (possibly rotated) GA area with corner (l.X, l.Y).
func gaBounds(capacity int, l Layout) rect {
	w, h := gaSize(capacity, l)
	box := emptyRect()
	for _, c := range []point{{0, 0}, {w, 0}, {0, h}, {w, h}} {
		box.add(place(c.x, c.y, l.Angle, l.X, l.Y))
	}
	return box
}

// sectionExtent is the unrotated width and depth of a section drawn at the
// origin, used by the automatic layout.
func sectionExtent(in SectionInput) (w, h float64) {
	var l Layout
	if in.Kind == KindGeneralAdmission {
		return gaSize(in.Capacity, l)
	}
	_, box := seatPositions(in.Rows, l)
	return box.maxX - box.minX, box.maxY - box.minY
}

// layoutVenue computes the bounds of every section and the coordinates of
// every seat. Sections with a layout are drawn where it says; the others are
// placed side by side, centred on x = 0, behind the stage and behind any
// explicitly placed section.
func layoutVenue(venueID string, ins []SectionInput, newID func() string) ([]store.Section, []store.Seat) {
	layouts := make([]Layout, len(ins))
	base, autoWidth := stageGap, 0.0
	for i, in := range ins {
		if in.Layout != nil {
			layouts[i] = *in.Layout
			var box rect
			if in.Kind == KindGeneralAdmission {
				box = gaBounds(in.Capacity, *in.Layout)
			} else {
				_, box = seatPositions(in.Rows, *in.Layout)
			}
			base = max(base, box.maxY+sectionGap)
			continue
		}
		w, _ := sectionExtent(in)
		autoWidth += w + sectionGap
	}
	cursor := -(autoWidth - sectionGap) / 2
	for i, in := range ins {
		if in.Layout != nil {
			continue
		}
		w, _ := sectionExtent(in)
		l := Layout{X: cursor, Y: base}
		if in.Kind == KindSeated {
			l.X += DefaultSeatSpacing / 2
			l.Y += DefaultRowSpacing / 2
		}
		layouts[i] = l
		cursor += w + sectionGap
	}

	var secs []store.Section
	var seats []store.Seat
	for i, in := range ins {
		sec := store.Section{ID: newID(), VenueID: venueID, Position: i + 1, Name: in.Name, Kind: string(in.Kind), Capacity: in.Capacity}
		var box rect
		if in.Kind == KindGeneralAdmission {
			box = gaBounds(in.Capacity, layouts[i])
		} else {
			var pos [][]point
			pos, box = seatPositions(in.Rows, layouts[i])
			sec.Capacity = 0
			for r, row := range in.Rows {
				for n, p := range pos[r] {
					seats = append(seats, store.Seat{ID: newID(), SectionID: sec.ID, RowLabel: row.Label,
						RowIndex: r, Number: n + 1, X: round2(p.x), Y: round2(p.y)})
				}
				sec.Capacity += row.Seats
			}
		}
		b := box.bounds()
		sec.BoundsX, sec.BoundsY, sec.BoundsW, sec.BoundsH = round2(b.X), round2(b.Y), round2(b.Width), round2(b.Height)
		secs = append(secs, sec)
	}
	return secs, seats
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
