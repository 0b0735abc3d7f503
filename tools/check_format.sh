#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (.clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while IFS= read -r file; do
  if ! clang-format --dry-run --Werror "$file" >/dev/null 2>&1; then
    echo "not formatted: $file"
    status=1
  fi
done < <(git ls-files '*.cc' '*.h' 2>/dev/null || find core events projections adapters gate tools tests -name '*.cc' -o -name '*.h')
exit $status
