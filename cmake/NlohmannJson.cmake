# nlohmann::json (header-only, 3.10 or later) reads and writes the .meta
# files (JSON). From an installed package (Debian's nlohmann-json3-dev;
# scripts/setup.sh installs it) or, where none is installed (GPU machines,
# scripts/gpu/check.sh), from FA_NLOHMANN_JSON_INCLUDE_DIR: a directory
# holding nlohmann/json.hpp (a copy of /usr/include/nlohmann).
#
# Gives FANlohmannJson, an interface library with the include path. Targets
# link it as $<BUILD_INTERFACE:FANlohmannJson>: the headers are used in .cpp
# files only, so an installed FlashMLIR (cmake/FlashMLIRPackage.cmake) does
# not need them.
set(FA_NLOHMANN_JSON_INCLUDE_DIR "" CACHE PATH
    "Directory holding nlohmann/json.hpp, used if no nlohmann_json package is installed")
add_library(FANlohmannJson INTERFACE)
find_package(nlohmann_json 3.10 CONFIG QUIET)
if(nlohmann_json_FOUND)
  target_link_libraries(FANlohmannJson INTERFACE nlohmann_json::nlohmann_json)
  message(STATUS "nlohmann_json ${nlohmann_json_VERSION}: ${nlohmann_json_DIR}")
  return()
endif()

set(fa_json_header "${FA_NLOHMANN_JSON_INCLUDE_DIR}/nlohmann/json.hpp")
if(NOT FA_NLOHMANN_JSON_INCLUDE_DIR OR NOT EXISTS "${fa_json_header}")
  message(FATAL_ERROR
    "nlohmann::json not found: install it (Debian: nlohmann-json3-dev) or set "
    "FA_NLOHMANN_JSON_INCLUDE_DIR to a directory holding nlohmann/json.hpp "
    "(e.g. a copy of /usr/include/nlohmann there; scripts/gpu/check.sh "
    "passes .gpu-carry/nlohmann-json)")
endif()
# The version macros are in json.hpp (single header) or in
# detail/abi_macros.hpp (3.11's multi-header layout).
set(fa_json_version_lines "")
foreach(header "${fa_json_header}"
        "${FA_NLOHMANN_JSON_INCLUDE_DIR}/nlohmann/detail/abi_macros.hpp")
  if(EXISTS "${header}")
    file(STRINGS "${header}" lines
         REGEX "#define NLOHMANN_JSON_VERSION_(MAJOR|MINOR) ")
    list(APPEND fa_json_version_lines ${lines})
  endif()
endforeach()
string(REGEX MATCH "MAJOR ([0-9]+)" _ "${fa_json_version_lines}")
set(fa_json_major "${CMAKE_MATCH_1}")
string(REGEX MATCH "MINOR ([0-9]+)" _ "${fa_json_version_lines}")
set(fa_json_minor "${CMAKE_MATCH_1}")
if("${fa_json_major}.${fa_json_minor}" VERSION_LESS 3.10)
  message(FATAL_ERROR "${fa_json_header}: nlohmann::json 3.10 or later needed, "
                      "found '${fa_json_major}.${fa_json_minor}'")
endif()
target_include_directories(FANlohmannJson SYSTEM INTERFACE
                           "${FA_NLOHMANN_JSON_INCLUDE_DIR}")
message(STATUS "nlohmann_json ${fa_json_major}.${fa_json_minor}: "
               "${FA_NLOHMANN_JSON_INCLUDE_DIR}")
