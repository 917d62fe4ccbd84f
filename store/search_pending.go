package store

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// SearchPending is an event whose search document must be rebuilt, as
// claimed by an indexer (table search_pending, migrations/00020_baseline.sql).
type SearchPending struct {
	EventID string `db:"event_id"`
	Seq     int64  `db:"seq"`
}

const (
	// One statement per relay batch. Ids are sorted so that two relays
	// upserting overlapping sets lock the rows in the same order.
	sqlSearchPendingAdd = `
INSERT INTO search_pending (event_id)
SELECT unnest($1::uuid[])
ON CONFLICT (event_id) DO UPDATE SET seq = EXCLUDED.seq, claimed_until = NULL`

	// Claims up to $1 rows nobody holds (or whose claim ran out) for $2 ms.
	// SKIP LOCKED: two indexers claiming at once take different rows.
	sqlSearchPendingClaim = `
UPDATE search_pending p SET claimed_until = now() + $2 * interval '1 millisecond'
FROM (SELECT event_id FROM search_pending
      WHERE claimed_until IS NULL OR claimed_until < now()
      ORDER BY created_at
      LIMIT $1
      FOR UPDATE SKIP LOCKED) c
WHERE p.event_id = c.event_id
RETURNING p.event_id::text AS event_id, p.seq`

	// Deletes the rows still at the version that was indexed; a row upserted
	// meanwhile (new seq, claim cleared) stays for the next round.
	sqlSearchPendingDone = `
DELETE FROM search_pending p
USING unnest($1::uuid[], $2::bigint[]) AS d(event_id, seq)
WHERE p.event_id = d.event_id AND p.seq = d.seq`

	// Gives claimed rows back at once (indexing failed).
	sqlSearchPendingRelease = `
UPDATE search_pending p SET claimed_until = NULL
FROM unnest($1::uuid[], $2::bigint[]) AS d(event_id, seq)
WHERE p.event_id = d.event_id AND p.seq = d.seq`
)

// SearchPendingAdd marks events for reindexing; the outbox relay calls it in
// its batch transaction.
func (s *Store) SearchPendingAdd(ctx context.Context, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	ids := slices.Clone(eventIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	_, err := s.db.Exec(ctx, sqlSearchPendingAdd, ids)
	return wrap("search pending add", err)
}

// SearchPendingClaim claims up to limit pending events for lease.
func (s *Store) SearchPendingClaim(ctx context.Context, limit int, lease time.Duration) ([]SearchPending, error) {
	rows, err := s.db.Query(ctx, sqlSearchPendingClaim, limit, lease.Milliseconds())
	if err != nil {
		return nil, wrap("search pending claim", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SearchPending])
	return out, wrap("search pending claim", err)
}

// SearchPendingDone deletes claimed events that were indexed, unless they
// changed again since the claim.
func (s *Store) SearchPendingDone(ctx context.Context, claimed []SearchPending) error {
	ids, seqs := splitPending(claimed)
	_, err := s.db.Exec(ctx, sqlSearchPendingDone, ids, seqs)
	return wrap("search pending done", err)
}

// SearchPendingRelease ends the claim of events that could not be indexed.
func (s *Store) SearchPendingRelease(ctx context.Context, claimed []SearchPending) error {
	ids, seqs := splitPending(claimed)
	_, err := s.db.Exec(ctx, sqlSearchPendingRelease, ids, seqs)
	return wrap("search pending release", err)
}

func splitPending(claimed []SearchPending) ([]string, []int64) {
	ids := make([]string, len(claimed))
	seqs := make([]int64, len(claimed))
	for i, c := range claimed {
		ids[i], seqs[i] = c.EventID, c.Seq
	}
	return ids, seqs
}
