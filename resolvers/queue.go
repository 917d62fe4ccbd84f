package resolvers

import (
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/queue"
)

// toModelQueueTicket converts a queue ticket (nil stays nil).
func toModelQueueTicket(t *queue.Ticket) *model.QueueTicket {
	if t == nil {
		return nil
	}
	v := t.View()
	m := &model.QueueTicket{EventID: t.EventID, Status: model.QueueStatus(t.Status), Position: v.Position,
		EstimatedWaitSeconds: v.EstimatedWaitSeconds, AdmissionToken: v.AdmissionToken, AdmissionExpiresAt: v.AdmissionExpiresAt}
	return m
}
