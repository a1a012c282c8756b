//===- RecentValues.h - The values of the last few keys ---------*- C++ -*-===//
//
// A small cache for the runtime's launch path: what a computation gave for
// its last few distinct keys (a call's sizes, a tensor map's inputs), so
// that a repeated launch skips it. A linear scan of a few entries costs less
// than hashing the keys.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_RECENTVALUES_H
#define FA_RUNTIME_RECENTVALUES_H

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace fa::rt {

/// The values kept for the last `Capacity` distinct keys, the oldest
/// replaced first. Keys compare with ==. Thread-safe.
template <typename Key, typename Value, size_t Capacity> class RecentValues {
public:
  static_assert(Capacity > 0, "keeps at least one value");

  /// The value kept for `key`, if any.
  std::optional<Value> find(const Key &key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &[kept, value] : entries_)
      if (kept == key)
        return value;
    return std::nullopt;
  }
  /// Keeps `value` for `key` (the caller found none).
  void insert(const Key &key, Value value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() < Capacity) {
      entries_.emplace_back(key, std::move(value));
      return;
    }
    entries_[oldest_] = {key, std::move(value)};
    oldest_ = (oldest_ + 1) % Capacity;
  }
  /// How many values it keeps.
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::pair<Key, Value>> entries_;
  size_t oldest_ = 0;
};

} // namespace fa::rt

#endif // FA_RUNTIME_RECENTVALUES_H
