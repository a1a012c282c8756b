# `cmake --install` exports FlashMLIR as a CMake package, so that a C++
# project finds it with find_package(FlashMLIR CONFIG) (README.md, "Using the
# runtime from C++"; examples/cpp). Two export sets, because only one of them
# needs MLIR/LLVM on the consumer's machine:
#   FlashMLIRRuntimeTargets  FlashMLIR::Runtime, FlashMLIR::Reference and
#                            FlashMLIR::CAPI (libFlashMLIR.so; lib/CAPI adds
#                            it): plain C++ (cuda.h for its types only).
#   FlashMLIRJitTargets      FlashMLIR::Jit and the compiler's static
#                            libraries it links; their link interfaces name
#                            the MLIR/LLVM imported targets, which the config
#                            file brings in with find_dependency(MLIR).
# Every exported path is relative to the install prefix: the build's own
# include paths are BUILD_INTERFACE only (lib/*/CMakeLists.txt), and the
# config file finds cuda.h and LLVM's headers where the consumer has them.
if(NOT TARGET FAJit)
  message(STATUS "FlashMLIR's JIT is not built: no CMake package to install")
  return()
endif()

include(CMakePackageConfigHelpers)
set(fa_package_dir lib/cmake/FlashMLIR)

set_target_properties(FARuntime PROPERTIES EXPORT_NAME Runtime)
set_target_properties(FAReference PROPERTIES EXPORT_NAME Reference)
set_target_properties(FAJit PROPERTIES EXPORT_NAME Jit)
install(TARGETS FARuntime FAReference EXPORT FlashMLIRRuntimeTargets
        ARCHIVE DESTINATION lib COMPONENT FlashMLIRDevelopment)

# The JIT's own libraries: FAJit and every library of this project it links.
# add_mlir_library installs the MLIR* archives already (without an export);
# installing them again here only adds them to the export set.
set(fa_jit_libraries
  FAJit
  MLIRFACompiler
  MLIRFA
  MLIRFAGPU
  MLIRFAGPUTransforms
  MLIRFAGPUToNVVM
  MLIRFATiledAttentionToGPU
  MLIRFAQuantizeToGPU
  MLIRFATransforms
  FAGPUTileLayout)
install(TARGETS ${fa_jit_libraries} EXPORT FlashMLIRJitTargets
        ARCHIVE DESTINATION lib COMPONENT FlashMLIRDevelopment)

# The public C++ headers: the runtime, the JIT and what its API takes (the
# compiler's AttentionConfig), the fp64 reference. fa-c/FlashMLIR.h comes with
# the C API (lib/CAPI). The dialect and pass headers are not an installed API
# (they need headers generated in the build tree).
install(DIRECTORY
  ${PROJECT_SOURCE_DIR}/include/fa/Compiler
  ${PROJECT_SOURCE_DIR}/include/fa/Jit
  ${PROJECT_SOURCE_DIR}/include/fa/Reference
  ${PROJECT_SOURCE_DIR}/include/fa/Runtime
  DESTINATION include/fa COMPONENT FlashMLIRDevelopment
  FILES_MATCHING PATTERN "*.h")

install(EXPORT FlashMLIRRuntimeTargets NAMESPACE FlashMLIR::
        DESTINATION ${fa_package_dir} COMPONENT FlashMLIRDevelopment)
install(EXPORT FlashMLIRJitTargets NAMESPACE FlashMLIR::
        DESTINATION ${fa_package_dir} COMPONENT FlashMLIRDevelopment)

# The config file asks for the LLVM/MLIR major version FlashMLIR was built
# with: the exported archives are only ABI-compatible with that one.
set(FA_LLVM_VERSION_MAJOR ${LLVM_VERSION_MAJOR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/FlashMLIRConfig.cmake.in
  ${PROJECT_BINARY_DIR}/${fa_package_dir}/FlashMLIRConfig.cmake
  INSTALL_DESTINATION ${fa_package_dir}
  NO_SET_AND_CHECK_MACRO NO_CHECK_REQUIRED_COMPONENTS_MACRO)
# Before 1.0 a minor release may break the API: only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/${fa_package_dir}/FlashMLIRConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/${fa_package_dir}/FlashMLIRConfig.cmake
  ${PROJECT_BINARY_DIR}/${fa_package_dir}/FlashMLIRConfigVersion.cmake
  DESTINATION ${fa_package_dir} COMPONENT FlashMLIRDevelopment)
