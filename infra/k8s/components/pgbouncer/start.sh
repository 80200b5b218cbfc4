#!/bin/sh
# Writes what PgBouncer reads from the kit's settings and Secret, then runs it: the server
# (DATABASE_ADDRESS, host:port, and DATABASE_NAME of the ConfigMap switchboard-config) and the
# two roles' passwords (DATABASE_API_PASSWORD and DATABASE_WORKER_PASSWORD of the Secret
# switchboard-secrets, URL-safe: no quoting needed), into the pod's memory-backed /tmp.
set -eu
umask 077
mkdir -p /tmp/pgbouncer
printf '[databases]\n%s = host=%s port=%s dbname=%s\n' \
  "$DATABASE_NAME" "${DATABASE_ADDRESS%:*}" "${DATABASE_ADDRESS##*:}" "$DATABASE_NAME" > /tmp/pgbouncer/databases.ini
printf '"switchboard_api" "%s"\n"switchboard_worker" "%s"\n' \
  "$DATABASE_API_PASSWORD" "$DATABASE_WORKER_PASSWORD" > /tmp/pgbouncer/userlist.txt
exec pgbouncer /etc/switchboard-pgbouncer/pgbouncer.ini
