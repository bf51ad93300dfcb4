#!/usr/bin/env bash
# Runs after `meson install`, unless into a DESTDIR: refreshes the dynamic loader's cache,
# so bagua-info, bagua-bench and programs linked with -lbagua find libbagua.so without
# LD_LIBRARY_PATH when LIBDIR is one of the loader's directories (Debian: /usr/local/lib
# and /usr/local/lib/<triplet>, so the default prefix). Otherwise says what to do instead.
#   ldconfig.sh LIBDIR
set -euo pipefail
libdir=$1
hint="set LD_LIBRARY_PATH=$libdir or link programs with -Wl,-rpath,$libdir"
if [ "$(id -u)" -ne 0 ]; then
  echo "bagua: not root, loader cache not refreshed: run ldconfig as root, or $hint"
  exit 0
fi
ldconfig
if ! ldconfig -p | grep -qF "=> $libdir/libbagua.so"; then
  echo "bagua: $libdir is not among the loader's directories (/etc/ld.so.conf): $hint"
fi
