#!/usr/bin/env bash
# Part of `pnpm test`: the console's browser test (tests/browser/console.test.ts) drives Debian's
# Chromium at /usr/bin/chromium. Run as root on a machine without it, this installs Debian's
# package, quietly; otherwise it does nothing, and the browser test says in one line how to get it.
[ -x /usr/bin/chromium ] && exit 0
{ [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; } || exit 0
echo "test: /usr/bin/chromium is missing: installing Debian's chromium for the browser test (apt-get install -y chromium)"
if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } >/dev/null 2>&1; then
  echo "test: chromium could not be installed: the browser test will fail"
fi
exit 0
