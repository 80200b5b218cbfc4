#!/usr/bin/env bash
# Part of `pnpm test`: the browser tests drive Debian's Chromium (/usr/bin/chromium) and
# tests/e2e/pgbouncer.test.ts runs the app behind Debian's PgBouncer (/usr/sbin/pgbouncer). Run as
# root on a machine missing either, this installs the missing packages, quietly, with one apt-get;
# otherwise it does nothing, and the browser tests fail, the PgBouncer test skips, with one line
# saying how to get them.
declare -A binaries=([chromium]=/usr/bin/chromium [pgbouncer]=/usr/sbin/pgbouncer)
missing=()
for package in "${!binaries[@]}"; do [ -x "${binaries[$package]}" ] || missing+=("$package"); done
[ ${#missing[@]} -eq 0 ] && exit 0
{ [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; } || exit 0
echo "test: installing Debian's ${missing[*]} for the tests that need them (apt-get install -y ${missing[*]})"
if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; } >/dev/null 2>&1; then
  echo "test: ${missing[*]} could not be installed: the tests that need them will fail or be skipped"
fi
exit 0
