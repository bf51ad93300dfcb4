#!/usr/bin/env bash
# bagua_torch as a user installs it: `pip install --no-build-isolation .` from this checkout
# into a fresh prefix (a copy of the venv's view), then the FSDP2 test under mpirun at 2 ranks
# with only that prefix's package on the path. Checks that nothing is installed outside the
# prefix's site-packages.
#   test/packaging/pip_install.sh PYTHON      (bin/bagua-venv's interpreter)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
python=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$python" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  --prefix "$prefix" "$root"
site=$("$python" -c "import sysconfig; print(sysconfig.get_path('platlib', vars={'base': '$prefix', 'platbase': '$prefix'}))")
outside=$(cd "$prefix" && find . -type f | grep -v "^./${site#"$prefix"/}/" || true)
if [ -n "$outside" ]; then
  echo "pip_install: installed outside site-packages: $outside" >&2
  exit 1
fi
test -f "$site/bagua_torch/__init__.py" && ls "$site"/bagua_torch/_C*.so >/dev/null
cd "$prefix"  # not the checkout: the installed package must be the one imported
export PYTHONPATH="$site" OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$python" -c "import bagua_torch; assert bagua_torch.__file__.startswith('$site'), bagua_torch.__file__"
OMPI_MCA_pml=ob1 mpirun --oversubscribe -np 2 "$python" "$root/test/torch/test_fsdp.py"
