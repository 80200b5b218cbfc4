#!/usr/bin/env sh
# Backs up Switchboard (README, "Operations", Backup and restore): everything it keeps is in
# PostgreSQL; Redis holds only what the workers rebuild from it.
#   DATABASE_URL=postgres://… infra/ops/backup.sh switchboard.dump
# One consistent snapshot (pg_dump reads in one transaction) while the service runs, in pg_dump's
# compressed custom format for infra/ops/restore.sh. Needs pg_dump of the server's major version
# or newer. Keep ENCRYPTION_KEY with it, elsewhere: without that key the restored credentials and
# chat account tokens cannot be read.
set -eu
if [ "$#" -ne 1 ]; then
  echo "usage: DATABASE_URL=postgres://… $0 <file>" >&2
  exit 64
fi
: "${DATABASE_URL:?set DATABASE_URL to the database to back up}"
pg_dump --format=custom --file="$1" --dbname="$DATABASE_URL"
echo "backup.sh: $1 written"
