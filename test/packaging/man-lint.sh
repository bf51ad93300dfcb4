#!/usr/bin/env bash
# Renders each man page with `man -l` and groff's warnings on: a warning, or a page
# without its NAME section, fails the test.
#   man-lint.sh PAGE...
set -euo pipefail
command -v man >/dev/null || { echo "SKIP: man not installed (Debian: man-db)"; exit 77; }
for page in "$@"; do
  if ! warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || [ -n "$warnings" ]; then
    echo "$page: ${warnings:-man failed}" >&2
    exit 1
  fi
  MANWIDTH=80 man -l "$page" | grep -q '^NAME' || { echo "$page: no NAME section" >&2; exit 1; }
  echo "$page: ok"
done
