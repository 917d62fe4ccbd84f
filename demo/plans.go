package demo

import (
	"fmt"

	"github.com/ticketing/ticketing/catalog"
)

// Venue plans, drawn with the stage at y = 0 (centred on x = 0) and rows
// growing away from it. Seat spacing is 10 units and row spacing 12.

func rowsOf(labels []string, first, grow int) []catalog.RowInput {
	rows := make([]catalog.RowInput, len(labels))
	for i, l := range labels {
		rows[i] = catalog.RowInput{Label: l, Seats: first + grow*i}
	}
	return rows
}

func letters(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = string(rune('A' + i))
	}
	return out
}

func numbers(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprint(i + 1)
	}
	return out
}

// centred is a layout whose widest row (widest seats) is centred on x = 0.
func centred(y float64, widest int, curve float64) *catalog.Layout {
	return &catalog.Layout{X: -float64(widest-1) * 10 / 2, Y: y, Curve: curve}
}

// theatre: fan-shaped stalls (rows widen and bend around the stage), two
// side boxes along the walls, and a curved balcony behind the stalls.
func theatre(stallRows, firstSeats, balconyRows int) []catalog.SectionInput {
	widest := firstSeats + 2*(stallRows-1)
	stallsDepth := float64(stallRows-1)*12 + 20
	halfWidth := float64(widest-1) * 10 / 2
	balconySeats := widest + 6
	return []catalog.SectionInput{
		{Name: "Platea", Kind: catalog.KindSeated, Rows: rowsOf(letters(stallRows), firstSeats, 2), Layout: centred(30, widest, 18)},
		// Left box: rows run away from the stage along the wall (+y); the
		// section's back is further left (-x).
		{Name: "Palco izquierdo", Kind: catalog.KindSeated, Rows: rowsOf(numbers(3), 8, 0),
			Layout: &catalog.Layout{X: -halfWidth - 40, Y: 40, Angle: 90}},
		// Right box: rows run towards the stage (-y); its back is to the right.
		{Name: "Palco derecho", Kind: catalog.KindSeated, Rows: rowsOf(numbers(3), 8, 0),
			Layout: &catalog.Layout{X: halfWidth + 40, Y: 40 + 70, Angle: -90}},
		{Name: "Anfiteatro", Kind: catalog.KindSeated, Rows: rowsOf(numbers(balconyRows), balconySeats, 0),
			Layout: centred(30+stallsDepth+40, balconySeats, 25)},
	}
}

// arena: a standing floor in front of the stage, two angled side stands and
// an end stand facing the stage.
func arena(floor, sideRows, sideSeats, endRows, endSeats int) []catalog.SectionInput {
	floorW, floorH := 300.0, 160.0
	return []catalog.SectionInput{
		{Name: "Pista", Kind: catalog.KindGeneralAdmission, Capacity: floor,
			Layout: &catalog.Layout{X: -floorW / 2, Y: 30, Width: floorW, Height: floorH}},
		{Name: "Grada lateral izquierda", Kind: catalog.KindSeated, Rows: rowsOf(letters(sideRows), sideSeats, 0),
			Layout: &catalog.Layout{X: -floorW/2 - 30, Y: 40, Angle: 100, Curve: 6}},
		{Name: "Grada lateral derecha", Kind: catalog.KindSeated, Rows: rowsOf(letters(sideRows), sideSeats, 0),
			Layout: &catalog.Layout{X: floorW/2 + 30, Y: 40 + float64(sideSeats-1)*10, Angle: -100, Curve: 6}},
		{Name: "Grada fondo", Kind: catalog.KindSeated, Rows: rowsOf(letters(endRows), endSeats, 1),
			Layout: centred(30+floorH+40, endSeats+endRows-1, 20)},
	}
}

// club: a standing floor and a small seated balcony at the back.
func club(floor, balconyRows, balconySeats int) []catalog.SectionInput {
	return []catalog.SectionInput{
		{Name: "Pista", Kind: catalog.KindGeneralAdmission, Capacity: floor,
			Layout: &catalog.Layout{X: -120, Y: 25, Width: 240, Height: 140}},
		{Name: "Anfiteatro", Kind: catalog.KindSeated, Rows: rowsOf(numbers(balconyRows), balconySeats, 0),
			Layout: centred(25+140+30, balconySeats, 10)},
	}
}
