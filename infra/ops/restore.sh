#!/usr/bin/env sh
# Restores a backup of infra/ops/backup.sh (README, "Operations", Backup and restore).
#   DATABASE_MIGRATION_URL=postgres://owner@…/switchboard infra/ops/restore.sh switchboard.dump
# Into the database of DATABASE_MIGRATION_URL (the user that owns the schema), else DATABASE_URL,
# which must exist and be empty: stop the api and the workers, drop the database and create it
# again first. Every object is then owned by the restoring user; grants come back as they were
# (the roles they name must exist: a dump carries no roles). One transaction: a restore that
# fails leaves the database empty. Needs psql and pg_restore.
set -eu
if [ "$#" -ne 1 ]; then
  echo "usage: DATABASE_MIGRATION_URL=postgres://… $0 <file>" >&2
  exit 64
fi
url=${DATABASE_MIGRATION_URL:-${DATABASE_URL:?set DATABASE_MIGRATION_URL or DATABASE_URL to the database to restore into}}
tables=$(psql --no-psqlrc --quiet --tuples-only --no-align --dbname="$url" \
  --command="select count(*) from pg_tables where schemaname not in ('pg_catalog', 'information_schema')")
if [ "$tables" != "0" ]; then
  echo "restore.sh: the database holds $tables tables: restore into an empty one (drop it and create it again)" >&2
  exit 1
fi
pg_restore --no-owner --exit-on-error --single-transaction --dbname="$url" "$1"
echo "restore.sh: $1 restored; start the workers (their reconciler puts every unfinished run back in Redis) and the api"
