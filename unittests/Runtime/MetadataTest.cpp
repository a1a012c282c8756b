//===- MetadataTest.cpp - .meta parsing -----------------------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/Metadata.h"

#include <gtest/gtest.h>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// The message of parsing `text`, which must fail.
std::string textError(const std::string &text) {
  KernelMetadata m;
  Status s = parseKernelMetadata(text, m);
  EXPECT_FALSE(s.ok()) << "accepted: " << text;
  return s.message();
}

/// A failing parse and the message part it must give.
struct BadCase {
  MetaJson meta;
  std::string expected;
};

/// Each case fails with its message, never a crash.
void expectErrors(const std::vector<BadCase> &cases) {
  for (const BadCase &c : cases) {
    std::string message = parseError(c.meta);
    EXPECT_TRUE(contains(message, c.expected))
        << "message: " << message << "\nexpected to contain: " << c.expected
        << "\nmetadata: " << c.meta.dump();
  }
}

TEST(RuntimeMetadata, ParsesGoodFile) {
  KernelMetadata m = parseOrDie(goodMeta());
  EXPECT_EQ(m.kind, KernelKind::Forward);
  EXPECT_EQ(m.entry, "fa_fwd");
  EXPECT_EQ(m.chip, "sm_90");
  EXPECT_EQ(m.chipVersion(), 90);
  EXPECT_FALSE(m.chipIsArchSpecific());
  EXPECT_EQ(m.dtype, DType::BF16);
  EXPECT_EQ(m.batch, 2);
  EXPECT_EQ(m.headsQ, 8);
  EXPECT_EQ(m.headsKV, 2);
  EXPECT_EQ(m.seqQ, 1024);
  EXPECT_EQ(m.seqKV, 1024);
  EXPECT_EQ(m.headDim, 128);
  EXPECT_EQ(m.headDimV, 128);
  EXPECT_EQ(m.scale, 0.08838834764831845);
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(m.windowLeft, -1);
  EXPECT_EQ(m.windowRight, -1);
  EXPECT_FALSE(m.hasWindow());
  EXPECT_FALSE(m.hasSoftcap());
  EXPECT_EQ(m.blockQ, 64);
  EXPECT_EQ(m.blockKV, 64);
  EXPECT_EQ(m.grid.x, 16u);
  EXPECT_EQ(m.grid.y, 8u);
  EXPECT_EQ(m.grid.z, 2u);
  EXPECT_EQ(m.block.product(), 128u);
  EXPECT_EQ(m.sharedBytes, 49152u);
  EXPECT_EQ(m.args, (std::vector<std::string>{"q", "k", "v", "o", "lse"}));
  EXPECT_TRUE(m.hasArg("lse"));
  EXPECT_FALSE(m.hasArg("dq"));
}

TEST(RuntimeMetadata, OptionalKeysDefaultAndLayoutDoesNotMatter) {
  KernelMetadata m = parseOrDie(patched(goodMeta(), {{"window_left", nullptr},
                                                     {"window_right", nullptr},
                                                     {"softcap", nullptr},
                                                     {"block_q", nullptr},
                                                     {"block_kv", nullptr},
                                                     {"dtype", "f16"},
                                                     {"causal", false}}));
  EXPECT_EQ(m.windowLeft, -1);
  EXPECT_EQ(m.windowRight, -1);
  EXPECT_EQ(m.softcap, 0.0);
  EXPECT_EQ(m.blockQ, 0);
  EXPECT_EQ(m.dtype, DType::F16);
  EXPECT_FALSE(m.causal);
  // One line or pretty-printed, any whitespace between tokens: the same.
  KernelMetadata compact = parseOrDie(goodMeta().dump());
  KernelMetadata spaced =
      parseOrDie(" \r\n\t" + goodMeta().dump(4, '\t') + "\n\n");
  EXPECT_EQ(compact.configString(), parseOrDie(goodMeta()).configString());
  EXPECT_EQ(spaced.configString(), compact.configString());
  // An integral scale is a number too.
  EXPECT_EQ(parseOrDie(patched(goodMeta(), {{"scale", 1}})).scale, 1.0);
}

TEST(RuntimeMetadata, WindowSoftcapAndArchSpecificChip) {
  KernelMetadata m = parseOrDie(patched(goodMeta(), {{"window_left", 128},
                                                     {"window_right", -7},
                                                     {"softcap", 30.0},
                                                     {"chip", "sm_90a"}}));
  EXPECT_EQ(m.windowLeft, 128);
  EXPECT_EQ(m.windowRight, -1); // Any negative bound is normalised.
  EXPECT_TRUE(m.hasWindow());
  EXPECT_EQ(m.softcap, 30.0);
  EXPECT_EQ(m.chipVersion(), 90);
  EXPECT_TRUE(m.chipIsArchSpecific());
}

TEST(RuntimeMetadata, ConfigStringIsCanonical) {
  KernelMetadata a = parseOrDie(goodMeta());
  // Same ABI, keys in another order: same config string.
  const MetaJson good = goodMeta();
  MetaJson reordered = {{"args", good["args"]}};
  for (const auto &[key, value] : good.items())
    if (key != "args")
      reordered[key] = value;
  ASSERT_EQ(reordered.begin().key(), "args");
  EXPECT_EQ(a.configString(), parseOrDie(reordered).configString());
  EXPECT_TRUE(contains(a.configString(), "scale=0.08838834764831845"));
  // Any difference shows.
  KernelMetadata c = parseOrDie(patched(goodMeta(), {{"seq_kv", 2048}}));
  EXPECT_NE(a.configString(), c.configString());
  KernelMetadata d =
      parseOrDie(patched(goodMeta(), {{"scale", 0.088388347648318}}));
  EXPECT_NE(a.configString(), d.configString());
}

TEST(RuntimeMetadata, ScaleAndSoftcapReadBackExactly) {
  for (double v : {0.08838834764831845, 0.1, 1.0 / 3.0, 30.000000000000004,
                   2.2250738585072014e-308, 1.7976931348623157e308}) {
    KernelMetadata m =
        parseOrDie(patched(goodMeta(), {{"scale", v}, {"softcap", v}}));
    EXPECT_EQ(m.scale, v);
    EXPECT_EQ(m.softcap, v);
  }
}

//===----------------------------------------------------------------------===//
// The syntax layer: any bytes give a located error, never a crash.
//===----------------------------------------------------------------------===//

TEST(RuntimeMetadata, TextThatIsNotJson) {
  const std::string good = goodMeta().dump(2);
  EXPECT_EQ(textError(""), "not valid JSON at byte 1: parse error at line 1, "
                           "column 1: syntax error while parsing value - "
                           "unexpected end of input; expected '[', '{', or a "
                           "literal");
  // The old `key = value` format. (nlohmann counts bytes from 1; the end
  // of the input is one past the last.)
  EXPECT_EQ(textError("kind = forward\nentry = fa_fwd\n"),
            "not valid JSON at byte 1: parse error at line 1, column 1: "
            "syntax error while parsing value - invalid literal; last read: "
            "'k'");
  // Cut anywhere, the object is unfinished.
  for (size_t cut : {size_t(1), size_t(40), good.size() / 2, good.size() - 1})
    EXPECT_TRUE(contains(textError(good.substr(0, cut)),
                         "not valid JSON at byte " + std::to_string(cut + 1)));
  // Trailing bytes, comments, a trailing comma, single quotes, NaN.
  EXPECT_TRUE(contains(textError(good + "x"), "syntax error while parsing "
                                              "value - invalid literal"));
  EXPECT_TRUE(contains(textError("// fa\n" + good), "not valid JSON at byte"));
  EXPECT_TRUE(contains(textError(R"({"kind": "forward",})"),
                       "expected string literal"));
  EXPECT_TRUE(contains(textError("{'kind': 'forward'}"), "invalid literal"));
  EXPECT_TRUE(contains(textError(R"({"kind": "forward", "scale": NaN})"),
                       "not valid JSON at byte 30"));
  // A number past double's range is refused by the parser itself.
  EXPECT_TRUE(contains(textError(R"({"kind": "forward", "scale": 1e999})"),
                       "number overflow"));
}

TEST(RuntimeMetadata, SyntaxErrorsQuoteOnlyPrintableBytes) {
  // A NUL, an escape sequence and a byte that is no UTF-8, where a token
  // is expected and inside a string: the message has none of them.
  for (std::string text :
       {std::string("{\"kind\": \0}", 11), std::string("{\"kind\x1b[2J\": 1}"),
        std::string("{\"kind\": \"for\xffward\"}")}) {
    std::string message = textError(text);
    EXPECT_TRUE(contains(message, "not valid JSON at byte")) << message;
    for (char c : message)
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
  }
}

TEST(RuntimeMetadata, TopLevelMustBeAnObject) {
  EXPECT_EQ(textError("[1, 2]"), "expected a JSON object, got an array");
  EXPECT_EQ(textError("42"), "expected a JSON object, got 42");
  EXPECT_EQ(textError("\"kind\""), "expected a JSON object, got \"kind\"");
  EXPECT_EQ(textError("null"), "expected a JSON object, got null");
  EXPECT_EQ(textError("{}"), "missing required key: \"kind\"");
}

TEST(RuntimeMetadata, KeysSetTwiceAreRefused) {
  // nlohmann would keep the last; a reader of the text might see the first.
  std::string text = goodMeta().dump(2);
  text.insert(text.find("\"batch\""), "\"batch\": 1,\n  ");
  EXPECT_EQ(textError(text), "\"batch\": key set twice");
  text = goodBackwardMeta().dump(2);
  text.insert(text.find("\"grid\"", text.find("\"post\"")),
              "\"grid\": [1, 1, 1], ");
  EXPECT_EQ(textError(text), "\"post\".\"grid\": key set twice");
  // The same key in two objects is no duplicate.
  parseOrDie(goodBackwardMeta());
}

TEST(RuntimeMetadata, OversizedAndDeeplyNestedText) {
  const std::string good = goodMeta().dump();
  std::string padded = good;
  padded.insert(1, kMaxMetadataBytes, ' ');
  EXPECT_EQ(textError(padded), "metadata of " + std::to_string(padded.size()) +
                                   " bytes; at most 65536");
  // Nesting as deep as the size allows: refused (unclosed, or a value of
  // the wrong type), without exhausting the stack.
  const size_t depth = kMaxMetadataBytes / 2 - 100;
  EXPECT_TRUE(contains(textError(std::string(kMaxMetadataBytes, '[')),
                       "not valid JSON at byte 65537"));
  std::string nested = R"({"kind": "forward", "args": )" +
                       std::string(depth, '[') + std::string(depth, ']') + "}";
  EXPECT_EQ(textError(nested),
            "\"args\"[0]: expected a parameter name, got an array");
  nested = R"({"kind": "forward", "tensor_maps": )";
  for (size_t i = 0; i < depth / 6; ++i)
    nested += R"({"q": )";
  nested += "1" + std::string(depth / 6, '}') + "}";
  EXPECT_EQ(textError(nested),
            "\"tensor_maps\".\"q\": expected [rows, cols], got an object");
}

//===----------------------------------------------------------------------===//
// The key table: unknown and missing keys, types and ranges.
//===----------------------------------------------------------------------===//

TEST(RuntimeMetadata, UnknownAndMissingKeys) {
  expectErrors({
      {patched(goodMeta(), {{"foo", 3}}), "\"foo\": unknown key"},
      {patched(goodMeta(), {{"Batch", 3}}), "\"Batch\": unknown key"},
      {patched(goodMeta(), {{"\x1b[2J", 3}}), "\"\\u001b[2J\": unknown key"},
      // The old format's backward keys are no keys now.
      {patched(goodBackwardMeta(), {{"pre_entry", "fa_bwd_pre"}}),
       "\"pre_entry\": unknown key"},
      // Inside a launch, only the launch keys.
      {patched(goodBackwardMeta(), {{"pre", {{"causal", true}}}}),
       "\"pre\".\"causal\": unknown key"},
      {patched(goodMeta(), {{"entry", nullptr}}),
       "missing required key of a forward kernel: \"entry\""},
      {patched(goodBackwardMeta(), {{"post", {{"block", nullptr}}}}),
       "\"post\": missing required key of a backward kernel's launch: "
       "\"block\""},
  });
  EXPECT_EQ(
      parseError(patched(goodMeta(), {{"entry", nullptr}, {"grid", nullptr}})),
      "missing required keys of a forward kernel: \"entry\", \"grid\"");
  EXPECT_EQ(parseError(MetaJson{{"kind", "backward"}}),
            "missing required keys of a backward kernel: \"chip\", "
            "\"dtype\", \"batch\", \"heads_q\", \"heads_kv\", \"seq_q\", "
            "\"seq_kv\", \"head_dim\", \"head_dim_v\", \"scale\", \"causal\", "
            "\"entry\", \"grid\", \"block\", \"shared_bytes\", \"args\", "
            "\"pre\", \"post\"");
}

TEST(RuntimeMetadata, WrongTypesAndRanges) {
  const MetaJson good = goodMeta();
  expectErrors({
      // A string, a float, a boolean or null for an integer.
      {patched(good, {{"batch", "two"}}),
       "\"batch\": expected a positive integer, got \"two\""},
      {patched(good, {{"batch", "2"}}),
       "\"batch\": expected a positive integer, got \"2\""},
      {patched(good, {{"seq_q", 1024.0}}),
       "\"seq_q\": expected a positive integer, got 1024.0"},
      {patched(good, {{"seq_q", 1e300}}),
       "\"seq_q\": expected a positive integer, got 1e+300"},
      {patched(good, {{"head_dim", true}}),
       "\"head_dim\": expected a positive integer, got true"},
      {patched(good, {{"block_q", MetaJson::array()}}),
       "\"block_q\": expected a non-negative integer, got an array"},
      // Out of range, and past int64: no wrap-around.
      {patched(good, {{"batch", 0}}),
       "\"batch\": expected a positive integer, got 0"},
      {patched(good, {{"block_q", -64}}),
       "\"block_q\": expected a non-negative integer, got -64"},
      {patched(good, {{"seq_q", uint64_t(1) << 63}}),
       "\"seq_q\": expected a positive integer, got 9223372036854775808"},
      {patched(good, {{"window_left", UINT64_MAX}}),
       "\"window_left\": expected a 64-bit integer, got "
       "18446744073709551615"},
      {patched(good, {{"shared_bytes", -1}}),
       "\"shared_bytes\": expected an integer in [0, 2147483647], got -1"},
      {patched(good, {{"shared_bytes", int64_t(1) << 31}}),
       "\"shared_bytes\": expected an integer in [0, 2147483647], got "
       "2147483648"},
      // An integer or anything else for a string.
      {patched(good, {{"entry", 5}}),
       "\"entry\": expected a kernel symbol name, got 5"},
      {patched(good, {{"entry", "fa fwd"}}),
       "\"entry\": expected a kernel symbol name, got \"fa fwd\""},
      {patched(good, {{"kind", "sideways"}}),
       "\"kind\": expected \"forward\", \"backward\" or \"quantize\", got "
       "\"sideways\""},
      {patched(good, {{"chip", "gfx90a"}}),
       "\"chip\": expected sm_<version> (e.g. \"sm_90\" or \"sm_90a\"), got "
       "\"gfx90a\""},
      {patched(good, {{"chip", "sm_"}}), "\"chip\": expected sm_<version>"},
      {patched(good, {{"dtype", "f32"}}),
       "\"dtype\": expected \"bf16\", \"f16\" or \"e4m3\", got \"f32\""},
      {patched(good, {{"out_dtype", "e4m3"}}),
       "\"out_dtype\": expected \"bf16\" or \"f16\", got \"e4m3\""},
      {patched(good, {{"compiler", ""}}),
       "\"compiler\": expected a non-empty string, got \"\""},
      // Numbers: scale positive, softcap 0 or positive.
      {patched(good, {{"scale", -0.1}}),
       "\"scale\": expected a positive finite number, got -0.1"},
      {patched(good, {{"scale", 0}}),
       "\"scale\": expected a positive finite number, got 0"},
      {patched(good, {{"scale", "0.1"}}),
       "\"scale\": expected a positive finite number, got \"0.1\""},
      {patched(good, {{"scale", 5e-324}}),
       "\"scale\": expected a positive finite number, got 5e-324"},
      {patched(good, {{"softcap", -1}}),
       "\"softcap\": expected 0 (none) or a positive finite number, got -1"},
      // Booleans are true or false, not 0 or 1.
      {patched(good, {{"causal", 1}}),
       "\"causal\": expected true or false, got 1"},
      {patched(good, {{"runtime_shapes", "true"}}),
       "\"runtime_shapes\": expected true or false, got \"true\""},
      // Launch extents, element by element.
      {patched(good, {{"grid", "16,8,2"}}),
       "\"grid\": expected [x, y, z], got \"16,8,2\""},
      {patched(good, {{"grid", {16, 8}}}),
       "\"grid\": expected [x, y, z], got an array"},
      {patched(good, {{"grid", {16, -3, 2}}}),
       "\"grid\"[1]: expected an integer in [1, 65535], got -3"},
      {patched(good, {{"grid", {16, 70000, 2}}}),
       "\"grid\"[1]: expected an integer in [1, 65535], got 70000"},
      {patched(good, {{"grid", {16, 8, 2.5}}}),
       "\"grid\"[2]: expected an integer in [1, 65535], got 2.5"},
      {patched(good, {{"grid", {int64_t(1) << 31, 1, 1}}}),
       "\"grid\"[0]: expected an integer in [1, 2147483647], got "
       "2147483648"},
      {patched(good, {{"block", {2048, 1, 1}}}),
       "\"block\"[0]: expected an integer in [1, 1024], got 2048"},
      {patched(good, {{"block", {1, 1, 65}}}),
       "\"block\"[2]: expected an integer in [1, 64], got 65"},
      {patched(good, {{"block", {64, 64, 1}}}),
       "\"block\": at most 1024 threads, got 4096"},
      // Parameter lists.
      {patched(good, {{"args", "q,k,v,o,lse"}}),
       "\"args\": expected an array of parameter names, got "
       "\"q,k,v,o,lse\""},
      {patched(good, {{"args", {"q", "k", "", "o"}}}),
       "\"args\"[2]: expected a parameter name, got \"\""},
      {patched(good, {{"args", {"q", "k", 3, "o"}}}),
       "\"args\"[2]: expected a parameter name, got 3"},
      {patched(good, {{"args", {"q", "k", "v", "o", "q"}}}),
       "\"args\"[4]: parameter 'q' listed twice"},
  });
}

TEST(RuntimeMetadata, KeysOfOtherKinds) {
  expectErrors({
      {patched(goodMeta(), {{"pre", goodBackwardMeta()["pre"]}}),
       "\"pre\": not a key of a forward kernel (only of backward and "
       "quantize kernels)"},
      {patched(goodMeta(), {{"post", goodBackwardMeta()["post"]}}),
       "\"post\": not a key of a forward kernel (only of backward kernels)"},
      {patched(goodMeta(), {{"heads", 8}}),
       "\"heads\": not a key of a forward kernel (only of quantize "
       "kernels)"},
      {patched(goodMeta(), {{"rotation_seed", 1}}),
       "\"rotation_seed\": not a key of a forward kernel"},
  });
}

//===----------------------------------------------------------------------===//
// Checks between keys.
//===----------------------------------------------------------------------===//

TEST(RuntimeMetadata, ChecksBetweenKeys) {
  const MetaJson good = goodMeta();
  expectErrors({
      // FP8: the output's type and the descales are required; out_dtype is
      // an FP8 kernel's only.
      {patched(good, {{"dtype", "e4m3"}}),
       "\"dtype\": a kernel of e4m3 inputs needs \"out_dtype\""},
      {patched(good, {{"out_dtype", "bf16"}}),
       "\"out_dtype\": only kernels of e4m3 inputs"},
      {patched(good, {{"args", {"q", "k", "v", "o", "lse", "dq"}}}),
       "\"args\": unknown forward kernel parameter 'dq'"},
      {patched(good, {{"args", {"q", "k", "v", "lse"}}}),
       "\"args\": a forward kernel must take 'o'"},
      {patched(good, {{"heads_kv", 3}}),
       "\"heads_q\": 8 is not a multiple of \"heads_kv\": 3"},
  });
}

TEST(RuntimeMetadata, BackwardKernelsParse) {
  KernelMetadata m = parseOrDie(goodBackwardMeta());
  EXPECT_EQ(m.kind, KernelKind::Backward);
  EXPECT_EQ(m.entry, "fa_bwd");
  EXPECT_EQ(m.args.size(), 9u);
  EXPECT_EQ(m.sharedBytes, 46592u);
  EXPECT_EQ(m.pre.entry, "fa_bwd_pre");
  EXPECT_EQ(m.pre.grid.x, 75u);
  EXPECT_EQ(m.pre.grid.y, 8u);
  EXPECT_EQ(m.pre.grid.z, 2u);
  EXPECT_EQ(m.pre.block.product(), 128u);
  EXPECT_EQ(m.pre.sharedBytes, 0u);
  EXPECT_EQ(m.pre.args,
            (std::vector<std::string>{"o", "do", "delta", "dq_acc"}));
  EXPECT_EQ(m.post.entry, "fa_bwd_post");
  EXPECT_EQ(m.post.args, (std::vector<std::string>{"dq_acc", "dq"}));
  std::vector<LaunchSpec> launches = m.launches();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].entry, "fa_bwd_pre");
  EXPECT_EQ(launches[1].entry, "fa_bwd");
  EXPECT_EQ(launches[1].grid.x, 4u);
  EXPECT_EQ(launches[2].entry, "fa_bwd_post");
  // A forward kernel has one launch and empty pre/post.
  KernelMetadata f = parseOrDie(goodMeta());
  EXPECT_EQ(f.launches().size(), 1u);
  EXPECT_TRUE(f.pre.entry.empty());
}

TEST(RuntimeMetadata, BackwardConfigStringIsCanonical) {
  KernelMetadata m = parseOrDie(goodBackwardMeta());
  std::string config = m.configString();
  for (const char *key :
       {"pre_entry=fa_bwd_pre", "pre_grid=75,8,2", "pre_args=o,do,delta,dq_acc",
        "post_entry=fa_bwd_post", "post_args=dq_acc,dq", "post_shared_bytes=0"})
    EXPECT_TRUE(contains(config, key)) << key << " in " << config;
  // Every launch field shows.
  KernelMetadata other = parseOrDie(
      patched(goodBackwardMeta(), {{"post", {{"grid", {76, 8, 2}}}}}));
  EXPECT_NE(other.configString(), config);
  other = parseOrDie(
      patched(goodBackwardMeta(), {{"pre", {{"shared_bytes", 16}}}}));
  EXPECT_NE(other.configString(), config);
  // The forward's has no pre_/post_ keys.
  EXPECT_FALSE(contains(parseOrDie(goodMeta()).configString(), "pre_"));
}

TEST(RuntimeMetadata, BackwardLaunchErrors) {
  const MetaJson good = goodBackwardMeta();
  expectErrors({
      {patched(good, {{"pre", nullptr}}),
       "missing required key of a backward kernel: \"pre\""},
      {patched(good, {{"pre", nullptr}, {"post", nullptr}}),
       "missing required keys of a backward kernel: \"pre\", \"post\""},
      {patched(good, {{"pre", {{"grid", nullptr}, {"args", nullptr}}}}),
       "\"pre\": missing required keys of a backward kernel's launch: "
       "\"grid\", \"args\""},
      {patched(good, {{"pre", "fa_bwd_pre"}}),
       "\"pre\": expected an object of launch keys, got \"fa_bwd_pre\""},
      {patched(good, {{"pre", {{"grid", {1, 2}}}}}),
       "\"pre\".\"grid\": expected [x, y, z], got an array"},
      {patched(good, {{"post", {{"grid", {75, -3, 2}}}}}),
       "\"post\".\"grid\"[1]: expected an integer in [1, 65535], got -3"},
      {patched(good, {{"post", {{"block", {2048, 1, 1}}}}}),
       "\"post\".\"block\"[0]: expected an integer in [1, 1024], got 2048"},
      {patched(good, {{"pre", {{"shared_bytes", -1}}}}),
       "\"pre\".\"shared_bytes\": expected an integer in [0, 2147483647], "
       "got -1"},
      {patched(good, {{"post", {{"entry", "9x"}}}}),
       "\"post\".\"entry\": expected a kernel symbol name, got \"9x\""},
      {patched(good, {{"pre", {{"args", {"o", "o"}}}}}),
       "\"pre\".\"args\"[1]: parameter 'o' listed twice"},
      {patched(good, {{"post", {{"args", {"dq_acc", "dz"}}}}}),
       "\"post\".\"args\": unknown backward kernel parameter 'dz'"},
      {patched(good, {{"post", {{"args", {"dq_acc"}}}}}),
       "\"post\".\"args\": this backward kernel must take 'dq'"},
      {patched(good, {{"args",
                       {"q", "k", "v", "do", "delta", "dq_acc", "dk", "dv"}}}),
       "\"args\": this backward kernel must take 'lse'"},
      {patched(good, {{"post", {{"entry", "fa_bwd"}}}}),
       "\"entry\", \"pre\".\"entry\" and \"post\".\"entry\" must name three "
       "different kernels"},
  });
}

//===----------------------------------------------------------------------===//
// tensor_maps
//===----------------------------------------------------------------------===//

/// goodMeta() with TMA descriptor parameters for q, k and v, the entries
/// written out of order.
MetaJson tensorMapMeta() {
  return patched(
      goodMeta(),
      {{"args", {"q", "k", "v", "o", "lse", "tmap_q", "tmap_k", "tmap_v"}},
       {"tensor_maps", {{"v", {128, 64}}, {"q", {128, 64}}, {"k", {64, 32}}}}});
}

TEST(RuntimeMetadata, ParsesTensorMaps) {
  KernelMetadata m = parseOrDie(tensorMapMeta());
  ASSERT_EQ(m.tensorMaps.size(), 3u);
  // Canonical order, whatever the order written.
  EXPECT_EQ(m.tensorMaps[0].tensor, "q");
  EXPECT_EQ(m.tensorMaps[1].tensor, "k");
  EXPECT_EQ(m.tensorMaps[2].tensor, "v");
  const TensorMapParam *k = m.findTensorMap("tmap_k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->rows, 64u);
  EXPECT_EQ(k->cols, 32u);
  EXPECT_EQ(k->paramName(), "tmap_k");
  EXPECT_EQ(k->toString(), "k:64x32");
  EXPECT_EQ(m.findTensorMap("tmap_o"), nullptr);
  EXPECT_EQ(m.findTensorMap("k"), nullptr);
  EXPECT_EQ(m.findTensorMap("tmap_"), nullptr);
  EXPECT_EQ(m.args.size(), 8u);
  // The key is optional: no maps without it.
  EXPECT_TRUE(parseOrDie(goodMeta()).tensorMaps.empty());
  // The box limits themselves are accepted.
  KernelMetadata edges = parseOrDie(
      patched(goodMeta(), {{"args", {"q", "k", "v", "o", "lse", "tmap_o"}},
                           {"tensor_maps", {{"o", {256, 1}}}}}));
  EXPECT_EQ(edges.tensorMaps[0].rows, 256u);
  EXPECT_EQ(edges.tensorMaps[0].cols, 1u);
}

TEST(RuntimeMetadata, TensorMapsConfigStringIsCanonical) {
  KernelMetadata m = parseOrDie(tensorMapMeta());
  std::string config = m.configString();
  EXPECT_TRUE(contains(config, ";args=q,k,v,o,lse,tmap_q,tmap_k,tmap_v;"
                               "tensor_maps=q:128x64,k:64x32,v:128x64"))
      << config;
  // The order entries are written in does not matter; a box size does.
  MetaJson reordered = patched(tensorMapMeta(), {{"tensor_maps", nullptr}});
  reordered["tensor_maps"] = {
      {"k", {64, 32}}, {"v", {128, 64}}, {"q", {128, 64}}};
  EXPECT_EQ(parseOrDie(reordered).configString(), config);
  EXPECT_NE(
      parseOrDie(patched(tensorMapMeta(), {{"tensor_maps", {{"q", {64, 64}}}}}))
          .configString(),
      config);
  // Without maps the config string (a kernel cache key) has no such key.
  EXPECT_FALSE(contains(parseOrDie(goodMeta()).configString(), "tensor_maps"));
}

TEST(RuntimeMetadata, TensorMapErrors) {
  const MetaJson good = tensorMapMeta();
  auto maps = [&](const MetaJson &entries) {
    return patched(good, {{"tensor_maps", entries}});
  };
  expectErrors({
      // Malformed entries.
      {patched(good, {{"tensor_maps", "q:128x64"}}),
       "\"tensor_maps\": expected an object of tensor: [rows, cols], got "
       "\"q:128x64\""},
      {patched(good, {{"tensor_maps", {{"q", {{"rows", 1}}}}}}),
       "\"tensor_maps\".\"q\": expected [rows, cols], got an object"},
      {maps({{"q", {128}}}),
       "\"tensor_maps\".\"q\": expected [rows, cols], got an array"},
      {maps({{"q", {128, 64, 2}}}),
       "\"tensor_maps\".\"q\": expected [rows, cols], got an array"},
      {maps({{"q", {128, "64"}}}),
       "\"tensor_maps\".\"q\"[1]: expected an integer in [1, 256], got "
       "\"64\" (the TMA box limit)"},
      // Unknown tensors.
      {maps({{"z", {128, 64}}}),
       "\"tensor_maps\".\"z\": unknown tensor (known: q, k, v, o, do, dq, "
       "dk, dv, dq_acc)"},
      {maps({{"lse", {128, 1}}}), "\"tensor_maps\".\"lse\": unknown tensor"},
      {maps({{"tmap_q", {128, 64}}}),
       "\"tensor_maps\".\"tmap_q\": unknown tensor"},
      // Box sizes.
      {maps({{"q", {0, 64}}}),
       "\"tensor_maps\".\"q\"[0]: expected an integer in [1, 256], got 0 "
       "(the TMA box limit)"},
      {maps({{"q", {128, 0}}}), "\"tensor_maps\".\"q\"[1]"},
      {maps({{"q", {257, 64}}}), "got 257"},
      {maps({{"q", {128, 512}}}), "got 512"},
      {maps({{"q", {-128, 64}}}), "got -128"},
      // Entries and parameters must match.
      {maps({{"o", {128, 64}}}),
       "\"tensor_maps\".\"o\": describes parameter 'tmap_o', which is not "
       "in \"args\""},
      {patched(good, {{"tensor_maps", {{"k", nullptr}}}}),
       "\"args\": parameter 'tmap_k' has no \"tensor_maps\" entry "
       "(expected \"k\": [rows, cols])"},
      {patched(good, {{"tensor_maps", nullptr}}),
       "\"args\": parameter 'tmap_q' has no \"tensor_maps\" entry"},
      {patched(good, {{"args",
                       {"q", "k", "v", "o", "lse", "tmap_q", "tmap_k", "tmap_v",
                        "tmap_lse"}}}),
       "parameter 'tmap_lse' has no \"tensor_maps\" entry"},
      {maps({{"do", {64, 64}}}),
       "\"tensor_maps\".\"do\": a forward kernel has no such tensor "
       "(forward tensor maps: q, k, v, o)"},
      {patched(good, {{"args",
                       {"q", "k", "v", "o", "lse", "tmap_q", "tmap_k", "tmap_v",
                        "dq"}}}),
       "\"args\": unknown forward kernel parameter 'dq' (known: q, k, v, o, "
       "lse, tmap_q, tmap_k, tmap_v)"},
  });
  // A tensor written twice is a key set twice.
  std::string text = good.dump();
  text.insert(text.find("\"k\":[64,32]"), "\"k\":[32,32],");
  EXPECT_EQ(textError(text), "\"tensor_maps\".\"k\": key set twice");
}

TEST(RuntimeMetadata, BackwardTensorMaps) {
  // Any launch may take a map, over the backward's tensors too.
  MetaJson meta = patched(
      goodBackwardMeta(),
      {{"args",
        {"q", "k", "v", "do", "lse", "delta", "dq_acc", "dk", "dv", "tmap_q",
         "tmap_do"}},
       {"pre", {{"args", {"o", "do", "delta", "dq_acc", "tmap_o"}}}},
       {"tensor_maps", {{"do", {64, 64}}, {"o", {64, 64}}, {"q", {64, 64}}}}});
  KernelMetadata m = parseOrDie(meta);
  ASSERT_EQ(m.tensorMaps.size(), 3u);
  EXPECT_EQ(m.tensorMaps[0].tensor, "q");
  EXPECT_EQ(m.tensorMaps[1].tensor, "o");
  EXPECT_EQ(m.tensorMaps[2].tensor, "do");
  expectErrors({
      {patched(meta, {{"tensor_maps", {{"dk", {64, 64}}}}}),
       "\"tensor_maps\".\"dk\": describes parameter 'tmap_dk', which is not "
       "in \"args\", \"pre\".\"args\" or \"post\".\"args\""},
      {patched(meta, {{"post", {{"args", {"dq_acc", "dq", "tmap_dq"}}}}}),
       "\"post\".\"args\": parameter 'tmap_dq' has no \"tensor_maps\" "
       "entry"},
  });
}

TEST(RuntimeMetadata, ReadFileErrorsNameThePath) {
  KernelMetadata m;
  Status s = readKernelMetadataFile("/nonexistent/dir/k.meta", m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "/nonexistent/dir/k.meta"));
}

//===----------------------------------------------------------------------===//
// Runtime shapes and packed sequences
//===----------------------------------------------------------------------===//

/// goodMeta() as a kernel with runtime shapes: no batch, seq_q, seq_kv or
/// grid; the size parameters after the tensors.
MetaJson runtimeShapesMeta() {
  return patched(
      goodMeta(),
      {{"batch", nullptr},
       {"seq_q", nullptr},
       {"seq_kv", nullptr},
       {"grid", nullptr},
       {"args", {"q", "k", "v", "o", "lse", "batch", "seq_q", "seq_kv"}},
       {"runtime_shapes", true}});
}

TEST(RuntimeMetadata, RuntimeShapesTakeBatchLengthsAndGridFromTheCall) {
  KernelMetadata m = parseOrDie(runtimeShapesMeta());
  EXPECT_TRUE(m.runtimeShapes);
  EXPECT_EQ(m.batch, 0);
  EXPECT_EQ(m.seqQ, 0);
  EXPECT_TRUE(contains(m.configString(), "runtime_shapes=1"));
  EXPECT_FALSE(
      contains(parseOrDie(goodMeta()).configString(), "runtime_shapes"));
  // Written false, the flag is as good as absent.
  EXPECT_EQ(parseOrDie(patched(goodMeta(), {{"runtime_shapes", false}}))
                .configString(),
            parseOrDie(goodMeta()).configString());

  StatusOr<KernelMetadata> shaped = m.instantiate(3, 1000, 77);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  EXPECT_FALSE(shaped->runtimeShapes);
  EXPECT_EQ(shaped->batch, 3);
  EXPECT_EQ(shaped->seqQ, 1000);
  EXPECT_EQ(shaped->seqKV, 77);
  // ceil(1000 / block_q = 64), heads_q, batch.
  EXPECT_EQ(shaped->grid.x, 16u);
  EXPECT_EQ(shaped->grid.y, 8u);
  EXPECT_EQ(shaped->grid.z, 3u);
  EXPECT_EQ(shaped->args, m.args);

  StatusOr<KernelMetadata> empty = m.instantiate(1, 0, 5);
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(contains(empty.status().message(), "must be positive"));
  StatusOr<KernelMetadata> huge = m.instantiate(70000, 8, 8);
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(contains(huge.status().message(), "exceeds the launch limits"));
  // A static kernel's metadata is its own whatever the call (the call's
  // shape is validated against it afterwards).
  KernelMetadata fixedMeta = parseOrDie(goodMeta());
  StatusOr<KernelMetadata> fixed = fixedMeta.instantiate(2, 0, 1024);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  EXPECT_EQ(fixed->configString(), fixedMeta.configString());
}

TEST(RuntimeMetadata, PersistentRuntimeShapesLaunchAtMostTheirBlocks) {
  KernelMetadata m =
      parseOrDie(patched(runtimeShapesMeta(), {{"persistent_blocks", 132}}));
  EXPECT_EQ(m.persistentBlocks, 132);
  // The config string (and so the kernel cache's key) tells it apart.
  EXPECT_TRUE(contains(m.configString(), "persistent_blocks=132"));
  EXPECT_FALSE(contains(parseOrDie(runtimeShapesMeta()).configString(),
                        "persistent_blocks"));
  // 16 Q blocks x 8 heads x 3 = 384 tiles: 132 blocks loop over them.
  StatusOr<KernelMetadata> many = m.instantiate(3, 1000, 77);
  ASSERT_TRUE(many.ok()) << many.status().message();
  EXPECT_EQ(many->grid.x, 132u);
  EXPECT_EQ(many->grid.y, 1u);
  EXPECT_EQ(many->grid.z, 1u);
  // 2 Q blocks x 8 heads x 1 = 16 tiles: a block each.
  StatusOr<KernelMetadata> few = m.instantiate(1, 100, 100);
  ASSERT_TRUE(few.ok()) << few.status().message();
  EXPECT_EQ(few->grid.x, 16u);
  EXPECT_EQ(few->grid.y, 1u);
  EXPECT_EQ(few->grid.z, 1u);
  // The tile grid's own limits still apply.
  StatusOr<KernelMetadata> huge = m.instantiate(70000, 8, 8);
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(contains(huge.status().message(), "exceeds the launch limits"));
}

TEST(RuntimeMetadata, CallCacheInstantiatesEachCallSizeOnce) {
  KernelMetadata m = parseOrDie(runtimeShapesMeta());
  CallMetadataCache calls;
  auto first = calls.instantiate(m, {3, 1000, 77, 0, 0, 0});
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ((*first)->grid.x, 16u);
  // The same sizes: the same metadata, not a copy.
  auto again = calls.instantiate(m, {3, 1000, 77, 0, 0, 0});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), first->get());
  EXPECT_EQ(calls.size(), 1u);
  // Any size that differs is another call.
  for (int i = 0; i < 6; ++i) {
    CallMetadataCache::Sizes sizes = {3, 1000, 77, 0, 0, 0};
    sizes[i] += 1;
    auto other = calls.instantiate(m, sizes);
    ASSERT_TRUE(other.ok()) << other.status().message();
    EXPECT_NE(other->get(), first->get());
  }
  EXPECT_EQ(calls.size(), 7u);
  // Errors are returned, never kept.
  EXPECT_FALSE(calls.instantiate(m, {1, 0, 5, 0, 0, 0}).ok());
  EXPECT_EQ(calls.size(), 7u);
  // Past kCapacity the oldest goes first.
  for (int64_t n = 1; n <= 2; ++n)
    ASSERT_TRUE(calls.instantiate(m, {1, n, n, 0, 0, 0}).ok());
  EXPECT_EQ(calls.size(), CallMetadataCache::kCapacity);
  auto evicted = calls.instantiate(m, {3, 1000, 77, 0, 0, 0});
  ASSERT_TRUE(evicted.ok());
  EXPECT_NE(evicted->get(), first->get());
  EXPECT_EQ((*evicted)->configString(), (*first)->configString());
}

TEST(RuntimeMetadata, PersistentBlocksErrors) {
  expectErrors({
      // A static kernel's grid is its launch already.
      {patched(goodMeta(), {{"persistent_blocks", 132}}),
       "\"persistent_blocks\": a persistent grid's blocks are a kernel with "
       "runtime shapes' (not packed sequences)"},
      {patched(runtimeShapesMeta(), {{"persistent_blocks", 0}}),
       "\"persistent_blocks\""},
      {patched(runtimeShapesMeta(), {{"persistent_blocks", "132"}}),
       "\"persistent_blocks\""},
      {patched(goodBackwardMeta(), {{"persistent_blocks", 132}}),
       "\"persistent_blocks\""},
  });
}

TEST(RuntimeMetadata, RuntimeShapesErrors) {
  expectErrors({
      // The call's keys may not be fixed in the file.
      {patched(runtimeShapesMeta(), {{"seq_q", 128}}),
       "\"seq_q\": the call's for a kernel with runtime shapes "
       "(\"runtime_shapes\": true)"},
      {patched(runtimeShapesMeta(), {{"block_q", nullptr}}),
       "\"runtime_shapes\": a kernel with runtime shapes needs \"block_q\""},
      // Without runtime shapes the size parameters are unknown, and the
      // keys are required as before.
      {patched(runtimeShapesMeta(), {{"runtime_shapes", nullptr}}),
       "missing required keys of a forward kernel: \"batch\", \"seq_q\", "
       "\"seq_kv\", \"grid\""},
      {patched(goodMeta(), {{"args", {"q", "k", "v", "o", "lse", "seq_q"}}}),
       "\"args\": unknown forward kernel parameter 'seq_q'"},
      // A backward set with runtime shapes has no lengths or grids of its
      // own, in no launch.
      {patched(goodBackwardMeta(), {{"runtime_shapes", true}}),
       "\"batch\": the call's for a kernel with runtime shapes"},
      {patched(goodBackwardMeta(), {{"runtime_shapes", true},
                                    {"batch", nullptr},
                                    {"seq_q", nullptr},
                                    {"seq_kv", nullptr},
                                    {"grid", nullptr}}),
       "\"pre\".\"grid\": the call's for a kernel with runtime shapes"},
  });
}

/// runtimeShapesMeta() as a varlen kernel: the offsets after lse, their
/// size parameter last.
MetaJson varlenMeta() {
  return patched(runtimeShapesMeta(),
                 {{"args",
                   {"q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k",
                    "seq_q", "seq_kv", "seq_offsets"}},
                  {"varlen", true}});
}

TEST(RuntimeMetadata, VarlenTakesSequencesAndTheLongestFromTheCall) {
  KernelMetadata m = parseOrDie(varlenMeta());
  EXPECT_TRUE(m.varlen);
  EXPECT_TRUE(contains(m.configString(), "varlen=1"));
  EXPECT_FALSE(
      contains(parseOrDie(runtimeShapesMeta()).configString(), "varlen"));
  // 5 sequences in 3000 query rows, the longest 700: grid (ceil(700 / 64),
  // heads_q, sequences); the tensors are batch 1.
  StatusOr<KernelMetadata> shaped = m.instantiate(1, 3000, 2000, 5, 700);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  EXPECT_EQ(shaped->batch, 1);
  EXPECT_EQ(shaped->seqQ, 3000);
  EXPECT_EQ(shaped->sequences, 5);
  EXPECT_EQ(shaped->maxSeqQ, 700);
  EXPECT_EQ(shaped->grid.x, 11u);
  EXPECT_EQ(shaped->grid.y, 8u);
  EXPECT_EQ(shaped->grid.z, 5u);

  auto refused = [&](int64_t batch, int64_t sequences, int64_t longest,
                     const std::string &expected) {
    StatusOr<KernelMetadata> s =
        m.instantiate(batch, 3000, 2000, sequences, longest);
    ASSERT_FALSE(s.ok()) << expected;
    EXPECT_TRUE(contains(s.status().message(), expected))
        << s.status().message();
  };
  refused(2, 5, 700, "take batch-1 tensors, got batch 2");
  refused(1, 0, 700, "need at least one sequence");
  refused(1, 5, 0, "longest query sequence in [1, seq_q = 3000]");
  refused(1, 5, 3001, "got 5 sequences, max_seqlen_q 3001");
  refused(1, 70000, 700, "exceeds the launch limits");
}

TEST(RuntimeMetadata, VarlenErrors) {
  expectErrors({
      {patched(varlenMeta(), {{"runtime_shapes", nullptr},
                              {"batch", 1},
                              {"seq_q", 8},
                              {"seq_kv", 8},
                              {"grid", {1, 1, 1}}}),
       "\"varlen\": packed sequences need \"runtime_shapes\": true"},
      {patched(
           varlenMeta(),
           {{"args", {"q", "k", "v", "o", "lse", "cu_seqlens_q", "seq_q"}}}),
       "\"args\": a varlen kernel must take 'cu_seqlens_q' and "
       "'cu_seqlens_k'"},
      {patched(varlenMeta(), {{"varlen", nullptr}}),
       "\"args\": 'cu_seqlens_q' and 'cu_seqlens_k' are a varlen kernel's"},
      {patched(runtimeShapesMeta(),
               {{"args", {"q", "k", "v", "o", "lse", "seq_offsets"}}}),
       "\"args\": unknown forward kernel parameter 'seq_offsets'"},
  });
}

} // namespace
