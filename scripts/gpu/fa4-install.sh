#!/usr/bin/env bash
# On the GPU machine: installs FlashAttention 4 into /tmp/fa4/site from what
# scripts/gpu/make-fa4.sh prepared, in two consecutive device calls:
#   fa4-install.sh a   (carrying .gpu-carry/fa4-a)
#   fa4-install.sh b   (carrying .gpu-carry/fa4-b and .gpu-carry/fa4-wheels)
# The small wheels go in first (pip --target), the cu13 libraries over them
# (a --target install of another wheel would replace their shared folder).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p /tmp/fa4
case "${1:-}" in
  a) cp .gpu-carry/fa4-a/cu13.tar.xz.part /tmp/fa4/part-a ;;
  b)
    [ -f /tmp/fa4/part-a ] || { echo "fa4-install: run step a first"; exit 1; }
    pip install -q --no-index --no-deps --target /tmp/fa4/site \
      .gpu-carry/fa4-wheels/*.whl
    cat /tmp/fa4/part-a .gpu-carry/fa4-b/cu13.tar.xz.part | xz -d |
      tar -C /tmp/fa4/site -x
    python3 -c "import site; site.addsitedir('/tmp/fa4/site'); \
from flash_attn.cute.interface import flash_attn_func; print('fa4: imports')"
    ;;
  *) echo "usage: fa4-install.sh a|b"; exit 2 ;;
esac
