#!/usr/bin/env bash
# fa-gpu-check for check-carried.sh: the build's binary relinked with
# libstdc++ and libgcc static and stripped, into .gpu-carry/bin (it then
# needs glibc only).
set -euo pipefail
cd "$(dirname "$0")/../.."
cmd=$(ninja -C build -t commands bin/fa-gpu-check | tail -n 1)
cmd=${cmd#: && }
cmd=${cmd%% && :*}
mkdir -p .gpu-carry/bin
(cd build && eval "${cmd/-o bin\/fa-gpu-check/-o ../.gpu-carry/bin/fa-gpu-check -static-libstdc++ -static-libgcc -s}")
if ldd .gpu-carry/bin/fa-gpu-check | grep -v -E 'linux-vdso|libc\.so|libm\.so|ld-linux' | grep -q .; then
  echo "make-carried-check: the binary needs more than glibc" >&2
  exit 1
fi
echo "make-carried-check: .gpu-carry/bin/fa-gpu-check (glibc $(objdump -T .gpu-carry/bin/fa-gpu-check | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n 1))"
