# cmake -P script: writes OUTPUT, a header that defines
# FA_COMPILER_FINGERPRINT, the first 12 hex digits of the SHA-256 of the
# compiler's sources (the files listed in SOURCES_FILE, one per line). It is
# part of compilerVersion() and hence of every kernel-cache key: a kernel
# cached by one build of the compiler is never taken for another's. The file
# is rewritten only when the value changes, so unchanged sources rebuild
# nothing.
file(STRINGS "${SOURCES_FILE}" sources)
set(all "")
foreach(source IN LISTS sources)
  file(SHA256 "${source}" digest)
  string(APPEND all "${digest}\n")
endforeach()
string(SHA256 fingerprint "${all}")
string(SUBSTRING "${fingerprint}" 0 12 fingerprint)
set(text "#define FA_COMPILER_FINGERPRINT \"${fingerprint}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
