package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// OutboxRow is a row of the transactional outbox.
type OutboxRow struct {
	ID        int64           `db:"id"`
	EventID   *string         `db:"event_id"`
	Topic     string          `db:"topic"`
	Payload   json.RawMessage `db:"payload"`
	CreatedAt time.Time       `db:"created_at"`
	// Age is how old the row was when the relay read it (database clock).
	Age float64 `db:"age"`
}

// outboxLockClass is the first key of the relay's per-partition advisory
// locks ("out" in ASCII); the partition number is the second.
const outboxLockClass = 0x6f7574

const (
	// A transaction-level lock: released at commit, rollback, or when the
	// relay's connection dies, so a crashed relay never stalls a partition.
	sqlOutboxTryLock = `SELECT pg_try_advisory_xact_lock($1, $2)`

	// The partition of a row is a hash of its event, so one event's rows are
	// always handled by one relay at a time, in id order.
	sqlOutboxBatch = `
SELECT id, event_id::text AS event_id, topic, payload, created_at,
       extract(epoch FROM clock_timestamp() - created_at)::float8 AS age
FROM outbox
WHERE (hashtext(coalesce(event_id::text, '')) & 2147483647) % $1 = $2
ORDER BY id
LIMIT $3`

	sqlOutboxDelete = `DELETE FROM outbox WHERE id = ANY($1)`

	sqlOutboxLag = `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM outbox`

	sqlOutboxInsert = `INSERT INTO outbox (event_id, topic, payload) VALUES ($1, $2, $3)`
)

// OutboxTryLock takes the relay lock of one partition for the current
// transaction; false means another relay holds it. Call it inside InTx.
func (s *Store) OutboxTryLock(ctx context.Context, partition int) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, sqlOutboxTryLock, outboxLockClass, partition).Scan(&ok)
	return ok, wrap("outbox lock", err)
}

// OutboxBatch returns up to limit unpublished rows of one partition (of
// partitions) in id order.
func (s *Store) OutboxBatch(ctx context.Context, partition, partitions, limit int) ([]OutboxRow, error) {
	rows, err := s.db.Query(ctx, sqlOutboxBatch, partitions, partition, limit)
	if err != nil {
		return nil, wrap("outbox batch", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OutboxRow])
	return out, wrap("outbox batch", err)
}

// OutboxDelete prunes published rows.
func (s *Store) OutboxDelete(ctx context.Context, ids []int64) error {
	_, err := s.db.Exec(ctx, sqlOutboxDelete, ids)
	return wrap("outbox delete", err)
}

// OutboxLag is the age of the oldest unpublished row (0 when empty).
func (s *Store) OutboxLag(ctx context.Context) (time.Duration, error) {
	var sec float64
	if err := s.db.QueryRow(ctx, sqlOutboxLag).Scan(&sec); err != nil {
		return 0, wrap("outbox lag", err)
	}
	return time.Duration(sec * float64(time.Second)), nil
}

// OutboxInsert writes one outbox row; call it in the transaction of the
// change it describes. payload is marshalled to JSON.
func (s *Store) OutboxInsert(ctx context.Context, eventID, topic string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	var ev *string
	if eventID != "" {
		ev = &eventID
	}
	s.markOutbox()
	_, err = s.db.Exec(ctx, sqlOutboxInsert, ev, topic, b)
	return wrap("outbox insert", err)
}
