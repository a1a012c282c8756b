# FA_STATIC_JIT: a self-contained fa-gpu-check-jit for machines that have a
# GPU but no MLIR (and may lack the libraries Debian's libLLVM.so pulls in:
# libz3, ICU, libxml2, ...). MLIR and LLVM come from their static archives,
# libstdc++/libgcc are linked in, zlib/zstd statically, and the binary is
# stripped; it needs only glibc-level libraries (libc, libm, ld-linux). See
# scripts/gpu/make-jit.sh.
#
# Debian's MLIR archives name the LLVM dylib ("LLVM") in their link interface;
# replace it with LLVM's static component libraries. Only the archive members
# something references are linked, so naming every component costs link time,
# not size. Components with dependencies outside glibc are left out.
# (LTO pulls in Polly; the others need libcurl, libffi, libedit, libxml2 or
# libpfm.)
set(FA_LLVM_STATIC_EXCLUDE
  LLVMExtensions LLVMLTO LLVMDTLTO LLVMDebuginfod LLVMInterpreter
  LLVMLineEditor LLVMWindowsManifest LLVMExegesis LLVMExegesisX86
  LLVMExegesisAArch64 LLVMExegesisPowerPC LLVMExegesisMips LLVMExegesisRISCV)
set(FA_LLVM_STATIC_LIBS)
foreach(lib ${LLVM_AVAILABLE_LIBS})
  if(lib MATCHES "^LLVM" AND TARGET ${lib} AND NOT lib IN_LIST
     FA_LLVM_STATIC_EXCLUDE)
    get_target_property(type ${lib} TYPE)
    get_target_property(deps ${lib} INTERFACE_LINK_LIBRARIES)
    # Tool libraries (LLVMDiff, LLVMOptDriver, ...) link the dylib itself.
    if(type STREQUAL "STATIC_LIBRARY" AND NOT "LLVM" IN_LIST deps)
      list(APPEND FA_LLVM_STATIC_LIBS ${lib})
    endif()
  endif()
endforeach()

foreach(target ${MLIR_EXPORTED_TARGETS})
  if(NOT TARGET ${target})
    continue()
  endif()
  get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT libs)
    continue()
  endif()
  set(new_libs)
  set(changed OFF)
  foreach(lib ${libs})
    if(lib STREQUAL "LLVM" OR lib STREQUAL "$<LINK_ONLY:LLVM>")
      list(APPEND new_libs ${FA_LLVM_STATIC_LIBS})
      set(changed ON)
    else()
      list(APPEND new_libs "${lib}")
    endif()
  endforeach()
  if(changed)
    list(REMOVE_DUPLICATES new_libs)
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES
                                               "${new_libs}")
  endif()
endforeach()

# LLVMSupport: static zlib and zstd; no libz3 (only clang's analyzer uses it).
find_library(FA_LIBZ_A NAMES libz.a REQUIRED)
find_library(FA_LIBZSTD_A NAMES libzstd.a REQUIRED)
set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES
  "rt;dl;m;${FA_LIBZ_A};${FA_LIBZSTD_A};LLVMDemangle")

# lld links the ~400 archives in seconds where ld.bfd takes minutes.
find_program(FA_LD_LLD ld.lld)

# Makes `target` self-contained: static libstdc++/libgcc, unused sections
# dropped, stripped.
function(fa_link_self_contained target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc
                      -Wl,--gc-sections -Wl,--as-needed -s)
  if(FA_LD_LLD)
    target_link_options(${target} PRIVATE -fuse-ld=lld -Wl,--icf=all)
  endif()
endfunction()
