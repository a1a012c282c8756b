//===- Sha256Test.cpp - SHA-256 against the FIPS 180-4 test vectors -------===//

#include "fa/Runtime/Sha256.h"

#include <gtest/gtest.h>

#include <string>

using namespace fa::rt;

namespace {

// The NIST / FIPS 180-4 example messages (csrc.nist.gov, "SHA-256" examples,
// and the long-message vector of FIPS 180-2 appendix B.3).
TEST(Sha256, NistVectors) {
  EXPECT_EQ(Sha256::hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 448 bits: the padding no longer fits the message's block.
  EXPECT_EQ(
      Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits.
  EXPECT_EQ(
      Sha256::hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                  "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha256::hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/// Lengths around the block and padding boundaries (55 bytes is the longest
/// message whose length still fits its last block). Values from Python's
/// hashlib.
TEST(Sha256, PaddingBoundaries) {
  const std::pair<size_t, const char *> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto &[length, expected] : cases)
    EXPECT_EQ(Sha256::hex(std::string(length, 'a')), expected) << length;
}

/// Any split of the input into update() calls gives the one-shot hash,
/// binary bytes (NUL, 0xff) included.
TEST(Sha256, IncrementalUpdatesMatchOneShot) {
  std::string message;
  for (int i = 0; i < 3; ++i)
    for (int byte = 0; byte < 256; ++byte)
      message += char(byte);
  const std::string expected =
      "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363";
  EXPECT_EQ(Sha256::hex(message), expected);
  for (size_t chunk : {1, 3, 63, 64, 65, 200}) {
    Sha256 sha;
    for (size_t pos = 0; pos < message.size(); pos += chunk)
      sha.update(std::string_view(message).substr(pos, chunk));
    EXPECT_EQ(Sha256::toHex(sha.digest()), expected) << chunk;
  }
}

TEST(Sha256, U64IsBigEndian) {
  Sha256 sha;
  sha.updateU64(0x0102030405060708ull);
  EXPECT_EQ(Sha256::toHex(sha.digest()),
            Sha256::hex("\x01\x02\x03\x04\x05\x06\x07\x08"));
}

} // namespace
