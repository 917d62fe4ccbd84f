package model

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
)

// SeatMap is the schema's SeatMap, bound as a marshaler: instead of
// executing the selection set once per seat (tens of allocations per seat,
// most of the CPU of a 10,000-seat map), it writes the selected fields
// itself, and keeps the bytes per distinct selection. A SeatMap shared
// between requests (the live seat map's projection converts each snapshot
// once) is therefore encoded once per selection; never modify one after
// its first use.
type SeatMap struct {
	EventID string `json:"eventId"`
	// Resume point: pass it as `after` to seatMapUpdates to get every change since this snapshot.
	Cursor           string                   `json:"cursor"`
	Seats            []*SeatMapSeat           `json:"seats"`
	GeneralAdmission []*GeneralAdmissionState `json:"generalAdmission"`

	encoded sync.Map // selection key -> []byte
	kept    atomic.Int32
}

// maxSeatMapEncodings bounds the selections a SeatMap keeps the bytes of;
// further ones are encoded per request.
const maxSeatMapEncodings = 8

// MarshalGQLContext writes the fields selected at ctx's field (aliases,
// fragments, @skip/@include and __typename as gqlgen's own execution).
func (m *SeatMap) MarshalGQLContext(ctx context.Context, w io.Writer) error {
	oc := graphql.GetOperationContext(ctx)
	fields := graphql.CollectFields(oc, graphql.GetFieldContext(ctx).Field.Selections, []string{"SeatMap"})
	var key strings.Builder
	selectionKey(&key, oc, fields, "SeatMapSeat", "GeneralAdmissionState")
	if b, ok := m.encoded.Load(key.String()); ok {
		_, err := w.Write(b.([]byte))
		return err
	}
	var buf bytes.Buffer
	m.encode(&buf, oc, fields)
	b := buf.Bytes()
	if m.kept.Add(1) <= maxSeatMapEncodings {
		if old, loaded := m.encoded.LoadOrStore(key.String(), b); loaded {
			b = old.([]byte)
		}
	}
	_, err := w.Write(b)
	return err
}

// UnmarshalGQLContext: SeatMap is output only.
func (m *SeatMap) UnmarshalGQLContext(context.Context, any) error {
	return errors.New("SeatMap is an output type")
}

// selectionKey writes the shape of the output: aliases and field names,
// nested; the list fields' children are collected for their element types.
func selectionKey(b *strings.Builder, oc *graphql.OperationContext, fields []graphql.CollectedField, seatType, gaType string) {
	for _, f := range fields {
		b.WriteString(f.Alias)
		b.WriteByte(':')
		b.WriteString(f.Name)
		switch f.Name {
		case "seats", "generalAdmission":
			typ := seatType
			if f.Name == "generalAdmission" {
				typ = gaType
			}
			b.WriteByte('{')
			selectionKey(b, oc, graphql.CollectFields(oc, f.Selections, []string{typ}), "", "")
			b.WriteByte('}')
		}
		b.WriteByte(',')
	}
}

func (m *SeatMap) encode(w *bytes.Buffer, oc *graphql.OperationContext, fields []graphql.CollectedField) {
	writeObject(w, fields, func(f graphql.CollectedField) {
		switch f.Name {
		case "__typename":
			writeString(w, "SeatMap")
		case "eventId":
			writeString(w, m.EventID)
		case "cursor":
			writeString(w, m.Cursor)
		case "seats":
			writeList(w, oc, f, "SeatMapSeat", m.Seats, func(s *SeatMapSeat, name string) {
				switch name {
				case "seatId":
					writeString(w, s.SeatID)
				case "sectionId":
					writeString(w, s.SectionID)
				case "status":
					writeString(w, string(s.Status))
				case "version":
					writeInt(w, s.Version)
				default: // validation admits no other field
					w.WriteString("null")
				}
			})
		case "generalAdmission":
			writeList(w, oc, f, "GeneralAdmissionState", m.GeneralAdmission, func(g *GeneralAdmissionState, name string) {
				switch name {
				case "sectionId":
					writeString(w, g.SectionID)
				case "available":
					writeInt(w, g.Available)
				case "version":
					writeInt(w, g.Version)
				default: // validation admits no other field
					w.WriteString("null")
				}
			})
		default: // validation admits no other field
			w.WriteString("null")
		}
	})
}

// writeList writes items as a list of typ objects with f's selection,
// value(item, name) writing each field but __typename.
func writeList[T any](w *bytes.Buffer, oc *graphql.OperationContext, f graphql.CollectedField, typ string, items []T, value func(item T, name string)) {
	sub := graphql.CollectFields(oc, f.Selections, []string{typ})
	w.WriteByte('[')
	for i, item := range items {
		if i > 0 {
			w.WriteByte(',')
		}
		writeObject(w, sub, func(f graphql.CollectedField) {
			if f.Name == "__typename" {
				writeString(w, typ)
				return
			}
			value(item, f.Name)
		})
	}
	w.WriteByte(']')
}

// writeObject writes {"alias":value,...} for fields, value(f) writing each value.
func writeObject(w *bytes.Buffer, fields []graphql.CollectedField, value func(f graphql.CollectedField)) {
	w.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			w.WriteByte(',')
		}
		writeString(w, f.Alias)
		w.WriteByte(':')
		value(f)
	}
	w.WriteByte('}')
}

// writeInt writes n as a JSON number.
func writeInt(w *bytes.Buffer, n int) { w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(n), 10)) }

// writeString writes s as a JSON string, escaped as gqlgen escapes strings.
func writeString(w io.Writer, s string) { graphql.MarshalString(s).MarshalGQL(w) }
