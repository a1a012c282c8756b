#!/usr/bin/env bash
# FlashMLIR as a C++ user gets it: installs the build into a temporary prefix
# (cmake --install), moves the install tree (the package must be
# relocatable), then configures, builds and runs examples/cpp and a
# runtime-only consumer (test/install/runtime-consumer) against the moved tree
# alone, from copies outside the source tree. Fails if a public header was not
# installed, a target is not exported, an exported file names the source or
# build tree, or a consumer's build reads anything from them.
# Exit 77 (skipped) when the example finds no CUDA device.
# Usage: cpp-install-check.sh <source-dir> <build-dir>
set -euo pipefail
source_dir=$(cd "$1" && pwd -P)
build_dir=$(cd "$2" && pwd -P)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/staged" >/dev/null
mv "$work/staged" "$work/prefix"
prefix=$work/prefix

# Every public header, as the source tree has them.
(cd "$source_dir/include" && find fa/Compiler fa/Jit fa/Reference fa/Runtime \
   fa-c -name '*.h') | while read -r header; do
  test -f "$prefix/include/$header" || { echo "not installed: $header"; exit 1; }
done
if grep -rlF -e "$source_dir" -e "$build_dir" "$prefix/lib/cmake"; then
  echo "the exported package names the source or build tree"
  exit 1
fi

# Configures and builds the project copied from $1 into $work/$2 against the
# install tree only (no package registries), then checks that FlashMLIR came
# from there and that no compile or link line reaches into the source or
# build tree.
build_consumer() {
  cp -r "$1" "$work/$2-src"
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake "${generator[@]}" -S "$work/$2-src" -B "$work/$2" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    "${launcher[@]}" "${@:3}" >"$work/$2.log" 2>&1 || { cat "$work/$2.log"; exit 1; }
  grep -qxF "FlashMLIR_DIR:PATH=$prefix/lib/cmake/FlashMLIR" \
    "$work/$2/CMakeCache.txt" || { echo "$2: FlashMLIR not from $prefix"; exit 1; }
  cmake --build "$work/$2" >>"$work/$2.log" || { cat "$work/$2.log"; exit 1; }
  if grep -rlF -e "$source_dir" -e "$build_dir" "$work/$2" \
       --include='*.ninja' --include='*.make' --include='*.txt' --include='*.rsp'; then
    echo "$2: the build used the source or build tree"
    exit 1
  fi
}

build_consumer "$source_dir/test/install/runtime-consumer" runtime-consumer \
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON
"$work/runtime-consumer/runtime_consumer"

build_consumer "$source_dir/examples/cpp" example
set +e
"$work/example/attention_jit" "$work/kernel-cache"
status=$?
set -e
exit $status
