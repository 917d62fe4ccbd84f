#!/usr/bin/env bash
# Fails when the committed gqlgen output is stale: regenerates in a temporary
# copy of the repository (never in the working tree) and diffs graph/.
# Usage: scripts/check-generated.sh   (CI runs it from the repository root)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Copy the Go sources (tracked and untracked, minus ignored and bulky dirs).
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | grep -zv '^web/node_modules/' |
		xargs -0 cp --parents -t "$tmp" 2>/dev/null || true
else
	cp -a . "$tmp"
fi

(cd "$tmp" && go tool gqlgen generate)

status=0
for f in graph/generated.go graph/model/models_gen.go; do
	if ! diff -u "$root/$f" "$tmp/$f" >"$tmp/diff.txt"; then
		echo "check-generated: $f is stale; run 'go tool gqlgen generate' and commit the result" >&2
		head -40 "$tmp/diff.txt" >&2
		status=1
	fi
done
# gqlgen also rewrites resolver stubs; a missing or renamed resolver shows here.
for f in resolvers/*.resolvers.go; do
	if ! diff -q "$root/$f" "$tmp/$f" >/dev/null; then
		echo "check-generated: $f would change on regeneration (missing resolver stubs or moved code)" >&2
		diff -u "$root/$f" "$tmp/$f" | head -40 >&2 || true
		status=1
	fi
done
[ "$status" = 0 ] && echo "check-generated: gqlgen output is up to date"
exit "$status"
