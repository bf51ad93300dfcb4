#!/usr/bin/env bash
# Consumer tests (suite 'packaging'): builds a 2-rank allreduce program against bagua the
# way a user does and runs it with the MPI's launcher:
#   c      mpicc app.c $(pkg-config --cflags --libs bagua)
#   cxx    g++ app.cpp $(pkg-config --cflags --libs bagua)    (a plain compiler)
#   cmake  find_package(bagua) and target_link_libraries(... bagua::bagua)
#   meson  bagua as a subproject, found by dependency('bagua')
# The first three use `meson install --destdir` into BUILDDIR/test/packaging/stage, shared
# by all of them and redone only when an installed file changed; programs find libbagua
# there through -Wl,-rpath (CMake adds it itself), as for any prefix outside the loader's
# directories. The meson one builds bagua's library from this source tree, at -O0.
#   consumers.sh KIND BUILDDIR PREFIX LIBDIR MPI MPICC MPIEXEC
set -euo pipefail
kind=$1 build=$2 prefix=$3 libdir=$4 mpi=$5 mpicc=$6 mpiexec=$7
here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../.." && pwd)
work="$build/test/packaging/$kind"
rm -rf "$work"
mkdir -p "$work"

stage="$build/test/packaging/stage"
root="$stage$prefix"
install_stage() {
  exec 9>"$stage.lock"
  flock 9
  local stamp="$stage/.installed" installed=()
  if [ -e "$stamp" ]; then
    # The built and source files meson install copies (symlinks it makes are relative).
    mapfile -t installed < <(/usr/bin/python3 -c 'import json, sys
print("\n".join(f for f in json.load(open(sys.argv[1])) if f.startswith("/")))' \
      "$build/meson-info/intro-installed.json")
  fi
  if [ ! -e "$stamp" ] || [ -n "$(find "${installed[@]}" -newer "$stamp" -print -quit)" ]; then
    rm -rf "$stage"
    meson install -C "$build" --no-rebuild --quiet --destdir "$stage"
    touch "$stamp"
  fi
  exec 9>&-
}

pc() { PKG_CONFIG_PATH="$root/$libdir/pkgconfig" pkg-config "$@" bagua; }

case "$kind" in
  c)
    install_stage
    # shellcheck disable=SC2046 # pkg-config's output is a list of flags
    "$mpicc" "$here/consumer/app.c" $(pc --cflags --libs) -Wl,-rpath,"$root/$libdir" \
      -o "$work/consumer-app"
    ;;
  cxx)
    install_stage
    # shellcheck disable=SC2046
    g++ "$here/consumer/app.cpp" $(pc --cflags --libs) -Wl,-rpath,"$root/$libdir" \
      -o "$work/consumer-app"
    ;;
  cmake)
    command -v cmake >/dev/null || { echo "SKIP: cmake not installed (Debian: cmake)"; exit 77; }
    install_stage
    cmake -S "$here/consumer" -B "$work" -G Ninja -DCMAKE_PREFIX_PATH="$root" >"$work/cmake.log" ||
      { cat "$work/cmake.log"; exit 1; }
    cmake --build "$work"
    ;;
  meson)
    cp -r "$here/consumer" "$work/src"
    mkdir "$work/src/subprojects"
    ln -s "$source_root" "$work/src/subprojects/bagua"
    meson setup "$work/build" "$work/src" --buildtype=plain --force-fallback-for=bagua \
      -Dbagua:mpi="$mpi" -Dbagua:tests=false -Dbagua:benchmarks=false -Dbagua:cuda=disabled \
      >"$work/setup.log" || { cat "$work/setup.log"; exit 1; }
    ninja -C "$work/build" consumer-app >"$work/ninja.log" || { cat "$work/ninja.log"; exit 1; }
    ln -s build/consumer-app "$work/consumer-app"
    ;;
  *)
    echo "consumers.sh: unknown kind '$kind' (c, cxx, cmake, meson)" >&2
    exit 2
    ;;
esac
"$mpiexec" -np 2 "$work/consumer-app"
