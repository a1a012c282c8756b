#!/usr/bin/env bash
# pip wheel . (pyproject.toml, scikit-build-core) installed into a fresh
# venv: the package and its library come from site-packages, and a varlen
# backward config validates there. The wheel links the LLVM 22 shared
# libraries here (FA_STATIC_JIT=OFF, a build directory of its own whose
# objects ccache serves from the main build's); the self-contained wheel
# (the default) is checked on the GPU machine (docs/perf/README.md).
# Usage: wheel-check.sh [python3]
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${1:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m pip wheel . --no-build-isolation --no-deps -w "$tmp/wheel" \
  -C build-dir=build-wheel -C cmake.define.FA_STATIC_JIT=OFF \
  >"$tmp/wheel.log" 2>&1 || { tail -n 40 "$tmp/wheel.log"; exit 1; }
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --no-index "$tmp"/wheel/flashmlir-*.whl
cd "$tmp"
env -u FLASHMLIR_LIBRARY -u PYTHONPATH "$tmp/venv/bin/python" - <<'PY'
import os
import flashmlir
package = os.path.dirname(os.path.realpath(flashmlir.__file__))
assert "site-packages" in package, package
assert os.path.dirname(os.path.realpath(flashmlir.library_path())) == package
flashmlir.validate(flashmlir.Config(heads_q=4, heads_kv=2, causal=True,
                                    varlen=True), backward=True)
print("wheel ok:", flashmlir.library_path())
PY
