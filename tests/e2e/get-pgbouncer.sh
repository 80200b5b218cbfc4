#!/usr/bin/env bash
# Part of `pnpm test`: tests/e2e/pgbouncer.test.ts runs the app behind Debian's PgBouncer at
# /usr/sbin/pgbouncer. Run as root on a machine without it, this installs Debian's package,
# quietly; otherwise it does nothing, and the test skips with one line saying how to get it.
[ -x /usr/sbin/pgbouncer ] && exit 0
{ [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; } || exit 0
echo "test: /usr/sbin/pgbouncer is missing: installing Debian's pgbouncer for the PgBouncer test (apt-get install -y pgbouncer)"
if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer; } >/dev/null 2>&1; then
  echo "test: pgbouncer could not be installed: the PgBouncer test will be skipped"
fi
exit 0
