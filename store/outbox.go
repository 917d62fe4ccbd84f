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
	// The relay's lock of a partition: transaction-level (released at
	// commit, rollback, or when the relay's connection dies, so a crashed
	// relay never stalls a partition). Whether it was taken is also noted
	// in a transaction-local setting, for sqlOutboxBatchIfLocked.
	sqlOutboxLock = `
SELECT ok, set_config('ticketing.outbox_locked', ok::text, true)
FROM (SELECT pg_try_advisory_xact_lock($1, $2) AS ok) l`

	// The partition's oldest rows, if sqlOutboxLock took the lock in this
	// transaction. The partition of a row is a hash of its event, so one
	// event's rows are always handled by one relay at a time, in id order. A statement of its own (not a join with the lock), so
	// its snapshot is taken once the lock is held: a batch that another
	// relay committed before we got the lock is never read again.
	sqlOutboxBatchIfLocked = `
SELECT id, event_id::text AS event_id, topic, payload, created_at,
       extract(epoch FROM clock_timestamp() - created_at)::float8 AS age
FROM outbox
WHERE current_setting('ticketing.outbox_locked', true) = 'true'
  AND (hashtext(coalesce(event_id::text, '')) & 2147483647) % $1 = $2
ORDER BY id
LIMIT $3`

	sqlOutboxDelete = `DELETE FROM outbox WHERE id = ANY($1)`

	sqlOutboxLag = `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM outbox`

	sqlOutboxInsert = `INSERT INTO outbox (event_id, topic, payload) VALUES ($1, $2, $3)`
)

// OutboxRelayBatch is one relay batch of a partition, in one transaction
// and three round trips: BEGIN, the lock and the read pipelined (three
// statements, one round trip), publish's own statements, then the DELETE
// of the batch pipelined with COMMIT. publish gets a
// Store on the transaction and the rows (never empty); its error rolls
// everything back. locked is false when another relay holds the partition.
// It needs a Store made by New (it takes a connection of its own).
func (s *Store) OutboxRelayBatch(ctx context.Context, partition, partitions, limit int,
	publish func(tx *Store, batch []OutboxRow) error) (batch []OutboxRow, locked bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, wrap("outbox batch", err)
	}
	defer conn.Release() // a connection still in a transaction is discarded
	rollback := func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK") }

	b := &pgx.Batch{}
	b.Queue("BEGIN")
	// The batch's commit (rows deleted once published) does not wait for
	// the WAL to reach the disk: if a database crash lost it, the rows would
	// be published again, and every consumer applies only newer versions.
	// Holds, orders and payments commit as usual; this one joined their
	// queue for WAL flushes in every relay round of a sale.
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(sqlOutboxLock, outboxLockClass, partition)
	b.Queue(sqlOutboxBatchIfLocked, partitions, partition, limit)
	br := conn.SendBatch(ctx, b)
	if _, err = br.Exec(); err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		var note string
		err = br.QueryRow().Scan(&locked, &note)
	}
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			batch, err = pgx.CollectRows(rows, pgx.RowToStructByName[OutboxRow])
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil || !locked || len(batch) == 0 {
		rollback() // nothing written: ending it either way releases the lock
		return nil, locked, wrap("outbox batch", err)
	}
	if err := publish(&Store{db: conn, pool: s.pool}, batch); err != nil {
		rollback()
		return nil, true, err
	}
	ids := make([]int64, len(batch))
	for i, r := range batch {
		ids[i] = r.ID
	}
	b = &pgx.Batch{}
	b.Queue(sqlOutboxDelete, ids)
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, b)
	if _, err = br.Exec(); err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		rollback()
		return nil, true, wrap("outbox commit", err)
	}
	return batch, true, nil
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
	args, err := s.outboxArgs(eventID, topic, payload)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, sqlOutboxInsert, args...)
	return wrap("outbox insert", err)
}

// outboxArgs are sqlOutboxInsert's arguments (payload marshalled to JSON),
// for a statement about to run: the transaction is marked as writing the
// outbox.
func (s *Store) outboxArgs(eventID, topic string, payload any) ([]any, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	var ev *string
	if eventID != "" {
		ev = &eventID
	}
	s.markOutbox()
	return []any{ev, topic, b}, nil
}
