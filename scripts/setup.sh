#!/usr/bin/env bash
# Installs every Debian package FlashMLIR's build and tests need. Safe to run twice.
set -euo pipefail

PKGS=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22
  cmake ninja-build ccache g++ libgtest-dev nlohmann-json3-dev
  python3 python3-pytest python3-pip python3-venv
  clang-format-22 libclang-rt-22-dev llvm-22
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# pip wheel . / pip install . (pyproject.toml) build through scikit-build-core
# (PyPI); test/python/wheel-check.sh builds without isolation.
if ! python3 -c 'import scikit_build_core' 2>/dev/null; then
  python3 -m pip install -q 'scikit-build-core>=0.10' 2>/dev/null ||
    python3 -m pip install -q --break-system-packages 'scikit-build-core>=0.10'
fi
echo "setup: all packages present"
