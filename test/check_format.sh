#!/usr/bin/env bash
# Fails when a C, C++ or CUDA source in the repository is not clang-format
# clean (.clang-format). Skips (77) when clang-format is not installed.
#   check_format.sh <source root>
set -euo pipefail
cd "$1"
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format not installed; skipping"
  exit 77
fi
unformatted=0
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check_format: $f is not clang-format clean (run clang-format -i $f)"
    unformatted=$((unformatted + 1))
  fi
done < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' 2>/dev/null ||
  find . -name '*.[ch]' -o -name '*.[ch]pp' -o -name '*.cu' -o -name '*.cuh')
echo "check_format: $unformatted file(s) to format"
[ "$unformatted" -eq 0 ]
