package resolvers

import (
	"time"

	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/queue"
)

// toModelQueueTicket converts a queue ticket (nil stays nil).
func toModelQueueTicket(t *queue.Ticket) *model.QueueTicket {
	if t == nil {
		return nil
	}
	m := &model.QueueTicket{EventID: t.EventID, Status: model.QueueStatus(t.Status)}
	switch t.Status {
	case queue.Waiting:
		m.Position = &t.Position
		if t.EstimatedWait != nil {
			s := int((*t.EstimatedWait + time.Second - 1) / time.Second)
			m.EstimatedWaitSeconds = &s
		}
	case queue.Admitted:
		m.AdmissionToken = &t.Token
		exp := t.ExpiresAt.UTC()
		m.AdmissionExpiresAt = &exp
	}
	return m
}
