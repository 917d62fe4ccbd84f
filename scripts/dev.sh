#!/usr/bin/env bash
# Runs the whole product on this machine: Postgres and Redis (installed from
# Debian's packages when absent), the sandbox payment provider, the API with
# its workers and the web app, and the demo catalog. Prints where to open it
# and a ready-to-paste development token. Ctrl-C stops everything it started.
#
#   scripts/dev.sh                  # one API instance on :8080
#   scripts/dev.sh --instances 3    # three instances behind HAProxy on :8080
set -euo pipefail
cd "$(dirname "$0")/.."
instances=1
while [ $# -gt 0 ]; do
	case $1 in
	--instances) instances=${2:?--instances N}; shift 2 ;;
	--instances=*) instances=${1#*=}; shift ;;
	*) echo "usage: scripts/dev.sh [--instances N]" >&2; exit 2 ;;
	esac
done
case $instances in '' | *[!0-9]* | 0) echo "--instances: want a positive number, got $instances" >&2; exit 2 ;; esac
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_go
ensure_postgres
ensure_redis
ensure_database ticketing
[ "$instances" -gt 1 ] && ensure_haproxy

mkdir -p data bin
# Development keys are kept in data/ so that tokens, admission permits and
# ticket codes stay valid across restarts. Production sets these explicitly.
if [ ! -f data/dev.env ]; then
	{
		echo "JWT_HS256_SECRET=dev-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
		echo "QUEUE_SIGNING_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
		echo "TICKET_SIGNING_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	} >data/dev.env
fi
set -a
# shellcheck disable=SC1091
. data/dev.env
DATABASE_URL=${DATABASE_URL:-"postgres:///ticketing?host=$PG_SOCKET_DIR&user=$PG_USER"}
HTTP_ADDR=${HTTP_ADDR:-:8080}
PAYSIM_ADDR=${PAYSIM_ADDR:-:8090}
set +a

if [ -f web/package.json ]; then
	log "building the web app"
	# npm install, not npm ci: npm 11 rejects vite 8's lock file over an
	# optional Windows-only dependency it never records.
	(cd web && { [ -d node_modules ] || npm install --no-audit --no-fund --loglevel=error; } && npm run --silent build)
fi
log "building bin/ticketing"
go build -o bin/ticketing .

./bin/ticketing migrate 2>>data/ticketing.log
log "loading the demo catalog"
./bin/ticketing seed --demo 2>>data/ticketing.log

pids=()
cleanup() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

./bin/ticketing paysim 2>>data/paysim.log &
pids+=($!)
port=${HTTP_ADDR##*:}
if [ "$instances" = 1 ]; then
	./bin/ticketing serve 2>>data/ticketing.log &
	pids+=($!)
else
	# N instances on the ports after $port (every one runs the workers: all
	# of them are safe on several instances), HAProxy on $port in front;
	# they share PUBLIC_BASE_URL (the load balancer) and the keys of
	# data/dev.env, and trust HAProxy's X-Forwarded-For. The payment
	# provider's notifications have their own HAProxy frontend, on the port
	# after the instances' (PAYMENTS_WEBHOOK_BASE_URL).
	backends=()
	hooks=$((port + instances + 1))
	for i in $(seq 1 "$instances"); do
		p=$((port + i))
		backends+=("$p")
		HTTP_ADDR=127.0.0.1:$p PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-http://127.0.0.1:$port} TRUSTED_PROXIES=127.0.0.1/32 \
			PAYMENTS_WEBHOOK_BASE_URL=${PAYMENTS_WEBHOOK_BASE_URL:-http://127.0.0.1:$hooks} \
			SEARCH_DIR=data/search-$i ./bin/ticketing serve 2>>"data/ticketing-$i.log" &
		pids+=($!)
	done
	haproxy_config "$port" --webhooks "$hooks" "${backends[@]}" >data/haproxy.cfg
	log "HAProxy on :$port in front of ports ${backends[*]}, the provider's webhooks on :$hooks (data/haproxy.cfg)"
	haproxy -f data/haproxy.cfg -db 2>>data/haproxy.log &
	pids+=($!)
fi

for _ in $(seq 1 60); do
	curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
	sleep 0.5
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 || die "the API did not start; see data/ticketing.log"

admin=$(./bin/ticketing token --sub admin --roles admin --ttl 24h)
fan=$(./bin/ticketing token --sub fan-1 --ttl 24h)
cat <<MSG

  Ticketing is running.

    Web app:     http://127.0.0.1:$port/  (sign in with any name: development sign-in)
    Playground:  http://127.0.0.1:$port/playground  (a development token already in its HEADERS)
    GraphQL:     http://127.0.0.1:$port/graphql
    Payments:    http://127.0.0.1:${PAYSIM_ADDR##*:}/  (sandbox provider: latest payments, /metrics)
    Metrics:     http://127.0.0.1:$port/metrics
    Logs:        data/ticketing.log (data/ticketing-N.log per instance), data/paysim.log

  Paste into the Playground's HTTP HEADERS:
    {"Authorization": "Bearer $fan"}

  An admin token (catalog mutations):
    {"Authorization": "Bearer $admin"}

  In another shell, for bin/ticketing token and the README's curl session:
    set -a; . data/dev.env; set +a

  Ctrl-C stops everything.
MSG
wait -n "${pids[@]}"
