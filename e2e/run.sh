#!/usr/bin/env bash
# Browser tests: builds the web app (when its sources changed) and
# bin/ticketing, creates a fresh database, starts the sandbox payment
# provider and the API (HS256 development secret, development sign-in on) on
# free ports, then runs the scenarios of e2e/tests with node:test driving
# Debian's Chromium through playwright-core (axe-core checks each page's
# accessibility). Screenshots go to e2e/artifacts/ (phone-*.png: the phone
# run, playground-*.png: the Playground).
# Stops everything it started and exits non-zero on failure.
#
#   e2e/run.sh                 # everything
#   E2E_KEEP=1 e2e/run.sh      # keep the database and logs for a look afterwards
#   e2e/run.sh --test-name-pattern=queue   # extra args go to node --test
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_go
ensure_postgres
ensure_redis
command -v node >/dev/null || die "Node.js is needed for the browser tests"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
	apt_install chromium
fi

if [ -f web/package.json ]; then
	if [ ! -f web/dist/index.html ] || [ ! -f web/playground/dist/index.html ] ||
		[ -n "$(find web/src web/index.html web/public web/package.json web/vite.config.ts web/vite.playground.config.ts \
			web/playground/index.html web/playground/main.ts web/playground/playground.css -newer web/dist/index.html 2>/dev/null | head -n1)" ]; then
		log "building the web app"
		(cd web && { [ -d node_modules ] || npm install --no-audit --no-fund --loglevel=error; } && npm run --silent build)
	fi
fi
(cd e2e && { { [ -d node_modules/playwright-core ] && [ -d node_modules/axe-core ]; } || npm ci --no-audit --no-fund --loglevel=error; })

log "building bin/ticketing"
mkdir -p bin
go build -o bin/ticketing .

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
work=$(mktemp -d /tmp/ticketing-e2e.XXXXXX)
db="e2e_$(date +%s)_$$"
api_port=$(free_port)
pay_port=$(free_port)
while [ "$pay_port" = "$api_port" ]; do pay_port=$(free_port); done

export DATABASE_URL="postgres:///$db?host=$PG_SOCKET_DIR&user=$PG_USER"
export REDIS_URL=${E2E_REDIS_URL:-"redis://127.0.0.1:6379/13"}
export HTTP_ADDR="127.0.0.1:$api_port"
export PAYSIM_ADDR="127.0.0.1:$pay_port"
export PAYMENTS_BASE_URL="http://127.0.0.1:$pay_port"
export PUBLIC_BASE_URL="http://127.0.0.1:$api_port"
export PAYMENTS_WEBHOOK_SECRET="whsec_e2e_$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export JWT_HS256_SECRET="e2e-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export QUEUE_SIGNING_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export TICKET_SIGNING_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SEARCH_DIR="$work/search"
export DEV_SIGNIN=true
# A slow waiting room, so that the queue scenario sees a position before admission.
export QUEUE_ADMIT_RATE=${QUEUE_ADMIT_RATE:-0.5}
export QUEUE_ADMIT_BURST=${QUEUE_ADMIT_BURST:-1}

pids=()
cleanup() {
	local rc=$?
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ -z "${E2E_KEEP:-}" ]; then
		psql -h "$PG_SOCKET_DIR" -U "$PG_USER" -d postgres -qc "DROP DATABASE IF EXISTS \"$db\"" >/dev/null 2>&1 || true
		[ $rc = 0 ] && rm -rf "$work"
	fi
	[ $rc = 0 ] || log "browser tests failed; logs in $work (serve.log, paysim.log), screenshots in e2e/artifacts/"
	exit $rc
}
trap cleanup EXIT INT TERM

log "database $db, API on :$api_port, paysim on :$pay_port"
psql -h "$PG_SOCKET_DIR" -U "$PG_USER" -d postgres -qc "CREATE DATABASE \"$db\"" >/dev/null
./bin/ticketing migrate 2>>"$work/serve.log"

./bin/ticketing paysim 2>>"$work/paysim.log" >&2 &
pids+=($!)
./bin/ticketing serve 2>>"$work/serve.log" >&2 &
pids+=($!)
for _ in $(seq 1 120); do
	curl -fsS "$PUBLIC_BASE_URL/readyz" >/dev/null 2>&1 && curl -fsS "$PAYMENTS_BASE_URL/healthz" >/dev/null 2>&1 && break
	sleep 0.25
done
curl -fsS "$PUBLIC_BASE_URL/readyz" >/dev/null || die "the API did not become ready; see $work/serve.log"
curl -fsS "$PAYMENTS_BASE_URL/healthz" >/dev/null || die "paysim did not become ready; see $work/paysim.log"

export E2E_BASE_URL="$PUBLIC_BASE_URL"
export E2E_PAYSIM_URL="$PAYMENTS_BASE_URL"
export E2E_ADMIN_TOKEN
E2E_ADMIN_TOKEN=$(./bin/ticketing token --sub e2e-admin --roles admin --ttl 1h)
export E2E_ARTIFACTS="$root/e2e/artifacts"
rm -rf "$E2E_ARTIFACTS"
mkdir -p "$E2E_ARTIFACTS"

log "browser tests (Chromium $("${CHROMIUM:-/usr/bin/chromium}" --version 2>/dev/null | awk '{print $2}'))"
cd e2e
node --test --test-concurrency=1 --test-reporter=spec "$@" tests/
