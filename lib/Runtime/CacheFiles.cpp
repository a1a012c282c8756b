//===- CacheFiles.cpp - The kernel cache's file system access -------------===//

#include "CacheFiles.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fa::rt::detail {

namespace {

std::string octalMode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

std::string ownerProblem(const struct stat &st) {
  return "owned by uid " + std::to_string(st.st_uid) +
         ", not by the current user (uid " + std::to_string(::geteuid()) + ")";
}

} // namespace

std::string makePrivateDirectories(const std::string &path) {
  if (path.empty())
    return "empty path";
  size_t pos = 0;
  while (pos != std::string::npos) {
    size_t slash = path.find('/', pos + 1);
    std::string prefix = path.substr(0, slash);
    pos = slash;
    if (prefix.empty() || prefix == "/")
      continue;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return "mkdir(" + prefix + "): " + std::strerror(errno);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return path + " is not a directory";
  return "";
}

std::string checkDirectoryIsPrivate(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "stat(" + path + "): " + std::strerror(errno);
  if (st.st_uid != ::geteuid())
    return "'" + path + "' is " + ownerProblem(st);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return "'" + path + "' is writable by its group or by others (mode " +
           octalMode(st.st_mode) + ")";
  return "";
}

FileRead readCacheFile(const std::string &path, uint64_t maxBytes,
                       bool requireOwner, std::string &out, std::string &why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT)
      return FileRead::Missing;
    why = errno == ELOOP ? std::string("a symbolic link, not a regular file")
                         : std::string("unreadable: ") + std::strerror(errno);
    return FileRead::Unusable;
  }
  struct stat st;
  const std::string tooLarge =
      "larger than " + std::to_string(maxBytes) + " bytes";
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (requireOwner && st.st_uid != ::geteuid())
    why = ownerProblem(st);
  else if (uint64_t(st.st_size) > maxBytes)
    why = tooLarge;
  out.clear();
  char buf[65536];
  while (why.empty()) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      why = std::string("unreadable: ") + std::strerror(errno);
    if (n <= 0)
      break;
    out.append(buf, size_t(n));
    // A file that grows while read is not an entry we wrote.
    if (out.size() > maxBytes)
      why = tooLarge;
  }
  ::close(fd);
  return why.empty() ? FileRead::Ok : FileRead::Unusable;
}

Status writeFileAtomically(const std::string &path, std::string_view data) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  // O_EXCL | O_NOFOLLOW: a file or link planted at the temporary name is
  // never written through. 0600: entries are the owner's alone.
  int fd = ::open(tmp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return Status::error("cannot create '" + tmp +
                         "': " + std::strerror(errno));
  auto failWith = [&](const char *what, int err) {
    ::unlink(tmp.c_str());
    return Status::error(std::string("cannot ") + what + " '" + tmp +
                         "': " + std::strerror(err));
  };
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      return failWith("write", err);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return failWith("write", err);
  }
  if (::close(fd) != 0)
    return failWith("write", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::error("cannot rename '" + tmp + "' to '" + path +
                         "': " + std::strerror(err));
  }
  return Status::success();
}

} // namespace fa::rt::detail
