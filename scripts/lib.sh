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
