#!/usr/bin/env bash
# Live seat map load benchmark: N WebSocket subscribers on one hot event of a
# real `ticketing serve` while holds run at full speed. Heavy: run it alone.
#   SUBSCRIBERS=10000 HOLD_WORKERS=8 LOAD_SECONDS=20 bench/seatmap/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)" # 10,000 subscribers need more than 10,000 descriptors per process
bin=$(mktemp -d)/ticketing
go build -o "$bin" .
SEATMAP_BENCH=1 TICKETING_BIN="$bin" go test -count=1 -timeout 15m -run TestSeatMapLoad -v ./bench/seatmap/ 2>&1 | grep -v '^=== RUN'
