//===- Status.h - Error reporting without exceptions ------------*- C++ -*-===//
//
// The runtime builds with -fno-exceptions, so every fallible operation returns
// a Status (ok, or an error with a human-readable message) or a StatusOr<T>
// (a value, or the error that prevented producing it).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_STATUS_H
#define FA_RUNTIME_STATUS_H

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fa::rt {

/// The result of an operation: ok, or an error with a message.
class [[nodiscard]] Status {
public:
  /// An ok status.
  Status() = default;

  static Status success() { return Status(); }
  /// An error. An empty message is replaced by "unknown error" so that an
  /// error is never mistaken for success by looking at the message alone.
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ =
        message.empty() ? std::string("unknown error") : std::move(message);
    return s;
  }

  bool ok() const { return !failed_; }
  /// The error message; empty when ok().
  const std::string &message() const { return message_; }

  /// For an error, returns "<context>: <message>"; an ok status is returned
  /// unchanged.
  Status withContext(std::string_view context) const {
    if (ok())
      return *this;
    return error(std::string(context) + ": " + message_);
  }

private:
  bool failed_ = false;
  std::string message_;
};

/// A value of type T, or the error that prevented producing it.
template <typename T> class [[nodiscard]] StatusOr {
public:
  /// Implicit from a value and from an error Status, so that functions can
  /// `return value;` and `return Status::error(...);`.
  StatusOr(const T &value) : value_(value) {}
  StatusOr(T &&value) : value_(std::move(value)) {}
  StatusOr(Status status) : status_(std::move(status)) {
    if (status_.ok()) {
      std::fprintf(stderr, "fa::rt::StatusOr constructed from an ok Status\n");
      std::abort();
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status &status() const { return status_; }

  /// The value. Must only be called when ok().
  T &value() & {
    check();
    return *value_;
  }
  const T &value() const & {
    check();
    return *value_;
  }
  T &&value() && {
    check();
    return std::move(*value_);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  void check() const {
    if (!value_) {
      std::fprintf(stderr, "fa::rt::StatusOr: value() of an error: %s\n",
                   status_.message().c_str());
      std::abort();
    }
  }

  std::optional<T> value_;
  Status status_;
};

} // namespace fa::rt

/// Evaluates `expr` (a Status); returns it from the enclosing function if it
/// is an error.
#define FA_RT_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    ::fa::rt::Status faRtStatus_ = (expr);                                     \
    if (!faRtStatus_.ok())                                                     \
      return faRtStatus_;                                                      \
  } while (false)

#endif // FA_RUNTIME_STATUS_H
