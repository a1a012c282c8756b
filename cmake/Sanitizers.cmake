# FA_SANITIZE: FlashMLIR's own code (compiler, runtime, JIT, C API, tools,
# tests) built with AddressSanitizer and UndefinedBehaviorSanitizer; LLVM and
# MLIR stay Debian's uninstrumented libraries. scripts/sanitize.sh configures
# such a build (build-sanitize/, clang-22) and runs its suite.
#
# With clang and its libFuzzer runtime (libclang-rt-22-dev) the same build
# also carries libFuzzer's coverage instrumentation and builds the fuzz
# targets in test/fuzz (FA_FUZZ): one set of objects serves both.
#
# Included after HandleLLVMOptions, whose flags this adjusts.

option(FA_SANITIZE "Build with -fsanitize=address,undefined" OFF)
set(FA_FUZZ OFF)
if(NOT FA_SANITIZE)
  return()
endif()

# -fno-sanitize-recover: a UBSan report fails the test that hit it instead
# of scrolling by. vptr needs RTTI, which code built against LLVM lacks
# (-fno-rtti); function checks indirect calls against a signature that the
# uninstrumented LLVM/MLIR code does not carry.
set(FA_SANITIZE_FLAGS -fsanitize=address,undefined
    -fno-sanitize=vptr,function -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer -g1)
add_compile_options(${FA_SANITIZE_FLAGS})
add_link_options(-fsanitize=address,undefined)
# Shared libraries (libFlashMLIR.so) leave the sanitizer runtime's symbols
# to the executable that loads them; LLVM's -z defs would refuse that.
string(REPLACE "-Wl,-z,defs" "" CMAKE_SHARED_LINKER_FLAGS
       "${CMAKE_SHARED_LINKER_FLAGS}")

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles(
    "#include <cstddef>
     #include <cstdint>
     extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) {
       return 0;
     }"
    FA_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  if(FA_HAVE_LIBFUZZER)
    set(FA_FUZZ ON)
    # Coverage feedback for the fuzzers from all of our code; the unit tests
    # get the sanitizer runtime's no-op coverage hooks.
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
message(STATUS "FlashMLIR: ASan + UBSan build; libFuzzer targets: ${FA_FUZZ}")
