# shellcheck shell=bash
# Shared helpers of scripts/dev.sh and scripts/test.sh: make sure Postgres and
# Redis are running on this machine, installing them from Debian's packages
# when they are absent. Sourced, not run.

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root for: $*"; fi
}

apt_install() {
	log "installing $* from Debian packages"
	if [ -z "${APT_UPDATED:-}" ]; then as_root apt-get update -qq >/dev/null; APT_UPDATED=1; fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

PG_SOCKET_DIR=${PG_SOCKET_DIR:-/var/run/postgresql}

ensure_go() {
	command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || die "Go is not installed (want Go 1.26 at /usr/local/go)"
	command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
}

ensure_postgres() {
	if ! command -v pg_ctlcluster >/dev/null || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
		apt_install postgresql postgresql-contrib
	fi
	if ! pg_isready -q -h "$PG_SOCKET_DIR" 2>/dev/null; then
		local v
		v=$(ls /etc/postgresql | sort -V | tail -n1)
		log "starting PostgreSQL $v"
		as_root pg_ctlcluster --skip-systemctl-redirect "$v" main start || die "could not start PostgreSQL"
		for _ in $(seq 1 30); do pg_isready -q -h "$PG_SOCKET_DIR" && break; sleep 1; done
		pg_isready -q -h "$PG_SOCKET_DIR" || die "PostgreSQL did not become ready"
	fi
	# Make sure the user running the scripts can connect as a superuser over
	# the socket (a fresh Debian install only lets the postgres OS user in).
	if ! psql -h "$PG_SOCKET_DIR" -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
		local me
		me=$(id -un)
		if ! psql -h "$PG_SOCKET_DIR" -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
			log "creating PostgreSQL role $me"
			as_root su postgres -c "psql -qc \"DO \\\$\\\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$me') THEN CREATE ROLE \\\"$me\\\" SUPERUSER LOGIN; END IF; END\\\$\\\$\"" \
				|| die "could not create a PostgreSQL role for $me"
		fi
		PG_USER=$me
	else
		PG_USER=postgres
	fi
	export PG_USER
}

ensure_redis() {
	command -v redis-server >/dev/null || apt_install redis-server
	if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
		log "starting Redis"
		as_root mkdir -p /var/lib/redis /var/log/redis
		as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
			--dir /var/lib/redis --logfile /var/log/redis/ticketing.log || die "could not start Redis"
		for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.2; done
		redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || die "Redis did not become ready"
	fi
}

# ensure_database NAME creates the database if it does not exist.
ensure_database() {
	local db=$1
	if ! psql -h "$PG_SOCKET_DIR" -U "$PG_USER" -d postgres -Atqc "select 1 from pg_database where datname = '$db'" | grep -q 1; then
		log "creating database $db"
		psql -h "$PG_SOCKET_DIR" -U "$PG_USER" -d postgres -qc "CREATE DATABASE \"$db\"" || die "could not create database $db"
	fi
}

# ensure_pg_replica starts a private Postgres primary (initdb, port
# PG_PRIMARY_PORT, default 5433) and a streaming replica of it made with
# pg_basebackup -R (PG_REPLICA_PORT, default 5434), under PG_PRIVATE_DIR
# (default /var/tmp/ticketing-pg), both trusting local connections. Reused
# when already running; idempotent. Exports TEST_PRIMARY_URL,
# TEST_REPLICA_URL and TEST_PRIMARY_PGDATA (the outage test stops and starts
# that primary with pg_ctl; the shared cluster is never touched).
ensure_pg_replica() {
	local dir=${PG_PRIVATE_DIR:-/var/tmp/ticketing-pg} pport=${PG_PRIMARY_PORT:-5433} rport=${PG_REPLICA_PORT:-5434}
	local bin
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	[ -x "$bin/initdb" ] || die "initdb not found under /usr/lib/postgresql"
	local run=()
	if [ "$(id -u)" = 0 ]; then run=(runuser -u postgres --); fi
	as_root mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
	if [ ! -f "$dir/primary/PG_VERSION" ]; then
		log "creating the private primary in $dir/primary"
		rm -rf "$dir/primary" "$dir/replica"
		"${run[@]}" "$bin/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null || die "initdb failed"
		cat >>"$dir/primary/postgresql.conf" <<CONF
port = $pport
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
wal_keep_size = 256MB
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 64MB
max_connections = 200
CONF
		echo "host replication postgres 127.0.0.1/32 trust" >>"$dir/primary/pg_hba.conf"
	fi
	if ! pg_isready -q -h 127.0.0.1 -p "$pport"; then
		log "starting the private primary on port $pport"
		"${run[@]}" "$bin/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w start >/dev/null || die "could not start the private primary ($dir/primary.log)"
	fi
	# A replica that cannot follow (its WAL is gone) is made again.
	if [ -f "$dir/replica/standby.signal" ] && grep -q 'has already been removed' "$dir/replica.log" 2>/dev/null; then
		log "the replica lost its WAL: making it again"
		"${run[@]}" "$bin/pg_ctl" -D "$dir/replica" -m immediate stop >/dev/null 2>&1 || true
		rm -rf "$dir/replica" "$dir/replica.log"
	fi
	if [ ! -f "$dir/replica/standby.signal" ]; then
		log "creating the streaming replica in $dir/replica (pg_basebackup -R, slot ticketing_replica)"
		rm -rf "$dir/replica"
		psql -h 127.0.0.1 -p "$pport" -U postgres -d postgres -Atqc \
			"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'ticketing_replica'" >/dev/null
		"${run[@]}" "$bin/pg_basebackup" -h 127.0.0.1 -p "$pport" -U postgres -D "$dir/replica" -R -X stream \
			-C -S ticketing_replica >/dev/null || die "pg_basebackup failed"
		sed -i "s/^port = .*/port = $rport/" "$dir/replica/postgresql.conf"
		echo "hot_standby_feedback = on" >>"$dir/replica/postgresql.conf"
	fi
	if ! pg_isready -q -h 127.0.0.1 -p "$rport"; then
		log "starting the replica on port $rport"
		"${run[@]}" "$bin/pg_ctl" -D "$dir/replica" -l "$dir/replica.log" -w start >/dev/null || die "could not start the replica ($dir/replica.log)"
	fi
	export TEST_PRIMARY_URL="postgres://postgres@127.0.0.1:$pport/postgres?sslmode=disable"
	export TEST_REPLICA_URL="postgres://postgres@127.0.0.1:$rport/postgres?sslmode=disable"
	export TEST_PRIMARY_PGDATA="$dir/primary" TEST_PG_BIN="$bin"
}

# ensure_redis_cluster starts a 3-primary Redis Cluster on ports
# REDIS_CLUSTER_PORT..+2 (default 7101-7103) under REDIS_CLUSTER_DIR
# (default /var/tmp/ticketing-redis-cluster), without persistence; reused
# when it already answers "cluster_state:ok". Exports TEST_REDIS_CLUSTER_ADDRS.
ensure_redis_cluster() {
	local dir=${REDIS_CLUSTER_DIR:-/var/tmp/ticketing-redis-cluster} base=${REDIS_CLUSTER_PORT:-7101}
	local ports=("$base" "$((base + 1))" "$((base + 2))") addrs=() p
	for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
	export TEST_REDIS_CLUSTER_ADDRS
	TEST_REDIS_CLUSTER_ADDRS=$(IFS=,; echo "${addrs[*]}")
	if redis-cli -p "$base" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; then return; fi
	log "starting a 3-primary Redis Cluster on ports ${ports[*]}"
	mkdir -p "$dir"
	for p in "${ports[@]}"; do
		if ! redis-cli -p "$p" ping >/dev/null 2>&1; then
			rm -f "$dir/nodes-$p.conf"
			redis-server --daemonize yes --bind 127.0.0.1 --port "$p" --cluster-enabled yes \
				--cluster-config-file "$dir/nodes-$p.conf" --save "" --appendonly no \
				--dir "$dir" --logfile "$dir/redis-$p.log" || die "could not start redis-server on $p"
		fi
	done
	for p in "${ports[@]}"; do
		for _ in $(seq 1 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
	done
	if ! redis-cli -p "$base" cluster info | grep -q 'cluster_slots_assigned:16384'; then
		for p in "${ports[@]}"; do redis-cli -p "$p" flushall >/dev/null; redis-cli -p "$p" cluster reset hard >/dev/null; done
		redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >/dev/null || die "redis-cli --cluster create failed"
	fi
	for _ in $(seq 1 100); do
		redis-cli -p "$base" cluster info | grep -q 'cluster_state:ok' && return
		sleep 0.1
	done
	die "the Redis Cluster did not reach cluster_state:ok"
}

ensure_haproxy() {
	command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || apt_install haproxy
}

# haproxy_config LISTEN_PORT [--webhooks PORT] BACKEND_PORT... prints the
# HAProxy configuration of N API instances on loopback behind one port
# (scripts/dev.sh --instances and the chaos suite's multi-instance
# scenarios): round robin, an instance leaves the rotation after two failed
# /healthz checks 500 ms apart and comes back after one good one; a request
# whose connection was refused is sent to another instance (never a request
# an instance may have started); WebSocket and SSE streams stay open for an
# hour. /healthz, not /readyz, is the check: with the primary Postgres down
# an instance still serves browsing from the replica (see README, "When
# Postgres is down"). maxconn: each connection takes two file descriptors
# and HAProxy must raise its limit to about twice maxconn; where the hard
# limit is 20,000 (this machine's containers), 8,000 is what fits.
#
# --webhooks PORT adds the payment provider's own ingress
# (PAYMENTS_WEBHOOK_BASE_URL): only POST /webhooks/payments, with 400 of the
# 8,000 connections kept for it. Fans' streams fill the public frontend's
# share and wait there; a notification that waited behind them would let a
# paid buyer's hold expire.
haproxy_config() {
	local listen=$1 hooks="" i=0 p public=8000
	shift
	if [ "${1:-}" = --webhooks ]; then
		hooks=$2 public=7600
		shift 2
	fi
	cat <<CFG
global
	maxconn 8000
defaults
	mode http
	timeout connect 2s
	timeout client 60s
	timeout server 60s
	timeout tunnel 1h
	timeout http-request 30s
	retries 2
	retry-on conn-failure
	option redispatch
frontend ticketing
	bind 127.0.0.1:$listen
	maxconn $public
	option forwardfor
	default_backend api
CFG
	if [ -n "$hooks" ]; then
		cat <<CFG
frontend webhooks
	bind 127.0.0.1:$hooks
	maxconn 400
	option forwardfor
	http-request deny deny_status 404 unless { path /webhooks/payments } METH_POST
	default_backend api
CFG
	fi
	cat <<CFG
backend api
	balance roundrobin
	option httpchk GET /healthz
	http-check expect status 200
	default-server inter 500ms fall 2 rise 1
CFG
	for p in "$@"; do
		printf '\tserver api%d 127.0.0.1:%d check\n' "$i" "$p"
		i=$((i + 1))
	done
}
