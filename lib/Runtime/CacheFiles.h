//===- CacheFiles.h - The kernel cache's file system access -----*- C++ -*-===//
//
// The parts of the kernel cache that touch the file system, where the
// directory may be shared with, or prepared by, someone else: creating it
// private, refusing one that is not, reading only regular files of a bounded
// size, and writing entries atomically with owner-only permissions.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_RUNTIME_CACHEFILES_H
#define FA_LIB_RUNTIME_CACHEFILES_H

#include "fa/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fa::rt::detail {

/// mkdir -p, creating each missing directory with mode 0700 (the cache's
/// parents hold nothing of others either). "" or the reason, e.g.
/// "mkdir(/x): Permission denied".
std::string makePrivateDirectories(const std::string &path);

/// "" if the existing directory `path` is owned by the effective user and
/// neither its group nor others can write it; else the reason, naming the
/// path: anyone who can write the directory can plant kernels this process
/// would run.
std::string checkDirectoryIsPrivate(const std::string &path);

enum class FileRead { Ok, Missing, Unusable };

/// Reads the file at `path` into `out`. Only a regular file (not a symbolic
/// link) of at most `maxBytes` bytes is read, and with `requireOwner` only
/// one the effective user owns: a FIFO blocks an open or read forever, a
/// device (or a link to one, /dev/zero) never ends, and another user's file
/// is not ours. Unusable gives the reason in `why`.
FileRead readCacheFile(const std::string &path, uint64_t maxBytes,
                       bool requireOwner, std::string &out, std::string &why);

/// Writes `data` to `path` atomically: to a new file (mode 0600, never an
/// existing one or a link) next to it, flushed, then renamed over `path`.
/// On failure nothing is left behind and the error names the file.
Status writeFileAtomically(const std::string &path, std::string_view data);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_CACHEFILES_H
