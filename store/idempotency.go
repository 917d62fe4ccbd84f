package store

import (
	"context"
)

// IdempotencyKey is a stored (owner, operation, key) with the hash of the
// arguments of its first use and the resource that use created.
type IdempotencyKey struct {
	RequestHash []byte
	ResourceID  string
}

const sqlClaimIdempotencyKey = `
INSERT INTO idempotency_keys (owner, operation, key, request_hash, resource_id)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (owner, operation, key) DO NOTHING`

const sqlGetIdempotencyKey = `
SELECT request_hash, resource_id::text FROM idempotency_keys
WHERE owner = $1 AND operation = $2 AND key = $3`

// ClaimIdempotencyKey inserts the key for resourceID. claimed is false when
// the key already existed; then existing is the stored row. Called inside a
// transaction, a concurrent claim of the same key waits for this transaction
// and, if it commits, reads its row; if it rolls back the key is free again.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, owner, operation, key string, hash []byte, resourceID string) (claimed bool, existing IdempotencyKey, err error) {
	tag, err := s.db.Exec(ctx, sqlClaimIdempotencyKey, owner, operation, key, hash, resourceID)
	if err != nil {
		return false, existing, wrap("claim idempotency key", err)
	}
	if tag.RowsAffected() == 1 {
		return true, existing, nil
	}
	err = s.db.QueryRow(ctx, sqlGetIdempotencyKey, owner, operation, key).Scan(&existing.RequestHash, &existing.ResourceID)
	return false, existing, wrap("get idempotency key", err)
}
