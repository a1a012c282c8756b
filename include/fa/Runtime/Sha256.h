//===- Sha256.h - SHA-256 (FIPS 180-4) --------------------------*- C++ -*-===//
//
// A small, self-contained SHA-256 for the kernel cache, which binds each
// entry to its key with it (KernelCache.h): the runtime links no crypto
// library, and needs no MAC or secret, only a hash whose collisions nobody
// can construct. Checked against the FIPS 180-4 / NIST test vectors
// (unittests/Runtime/Sha256Test.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_SHA256_H
#define FA_RUNTIME_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fa::rt {

/// Incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  void update(const void *data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  /// Hashes `value` as 8 bytes, big-endian: a length prefix that keeps
  /// concatenated fields unambiguous.
  void updateU64(uint64_t value);
  /// Pads and returns the hash. The object is spent afterwards.
  Digest digest();

  /// The hash of `bytes`, as 64 lowercase hex digits.
  static std::string hex(std::string_view bytes);
  static std::string toHex(const Digest &digest);

private:
  void compressBlock(const uint8_t *block);

  uint32_t state_[8];
  uint8_t block_[64];
  size_t blockBytes_ = 0;   ///< Bytes buffered in block_.
  uint64_t totalBytes_ = 0; ///< Message length so far.
};

} // namespace fa::rt

#endif // FA_RUNTIME_SHA256_H
