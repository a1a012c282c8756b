#!/usr/bin/env bash
# Formats the C/C++ lines changed since BASE (default: HEAD, i.e. the working
# tree's uncommitted changes) in LLVM style with clang-format 22, leaving
# untouched lines alone. scripts/setup.sh installs clang-format-22.
#   scripts/format.sh [BASE]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD}
git diff -U0 --no-color "$base" -- '*.cpp' '*.h' |
  clang-format-diff-22 -p1 -i -style=LLVM
git diff --stat "$base" -- '*.cpp' '*.h' | tail -1
