#!/usr/bin/env bash
# Installs the build tree into a temporary prefix (cmake --install) and checks
# that the flashmlir package imports from there and loads the installed
# libFlashMLIR.so (not the build tree's), then validates a config.
# Usage: install-check.sh <build-dir> <python3>
set -euo pipefail
build=$1
python=${2:-python3}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/lib/libFlashMLIR.so"
test -f "$prefix/include/fa-c/FlashMLIR.h"
test -f "$prefix/python/flashmlir/__init__.py"
cd "$prefix"
env -u FLASHMLIR_LIBRARY PYTHONPATH="$prefix/python" "$python" - "$prefix" <<'PY'
import os, sys
prefix = os.path.realpath(sys.argv[1])
import flashmlir
pkg = os.path.realpath(os.path.dirname(flashmlir.__file__))
lib = os.path.realpath(flashmlir.library_path())
assert pkg.startswith(prefix), (pkg, prefix)
assert lib == os.path.join(prefix, "lib", "libFlashMLIR.so"), lib
flashmlir.validate(flashmlir.Config(heads_q=4, heads_kv=2, causal=True))
try:
    flashmlir.validate(flashmlir.Config(heads_q=3, heads_kv=2))
except flashmlir.FlashMLIRError as e:
    assert "multiple of key/value heads" in str(e), e
else:
    raise AssertionError("bad config accepted")
print("install tree ok:", lib)
PY
# The benchmark module runs from the install tree too (its CPU side).
env -u FLASHMLIR_LIBRARY PYTHONPATH="$prefix/python" \
  FLASHMLIR_CACHE_DIR="$prefix/cache" "$python" -m flashmlir.bench \
  --precompile --hdims 64 --seqlens 16384 --causal no --directions fwd \
  --jobs 1 | grep -q "1 kernels for sm_90, 0 failed"
echo "install tree: python -m flashmlir.bench ok"
