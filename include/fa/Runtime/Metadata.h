//===- Metadata.h - Kernel metadata (.meta files) ---------------*- C++ -*-===//
//
// fa-compile emits, next to each kernel's PTX, a `<name>.meta` file that
// describes the kernel's ABI: one JSON object. Example (a forward kernel):
//
//   {
//     "kind": "forward",             // "backward" / "quantize": see below
//     "chip": "sm_90",
//     "dtype": "bf16",               // "bf16" | "f16" | "e4m3"
//     "batch": 2,
//     "heads_q": 8,
//     "heads_kv": 2,
//     "seq_q": 1024,
//     "seq_kv": 1024,
//     "head_dim": 128,
//     "head_dim_v": 128,
//     "scale": 0.08838834764831845,
//     "causal": true,
//     "window_left": -1,             // -1 = unbounded (optional, default -1)
//     "window_right": -1,            // (optional, default -1)
//     "softcap": 0.0,                // 0 = none (optional, default 0)
//     "block_q": 64,                 // informational (optional)
//     "block_kv": 64,                // informational (optional)
//     "tensor_maps": {"q": [128, 64]},  // TMA descriptors (optional)
//     "entry": "fa_fwd",             // kernel symbol in the PTX
//     "grid": [16, 8, 2],
//     "block": [128, 1, 1],
//     "shared_bytes": 49152,         // dynamic shared memory
//     "args": ["q", "k", "v", "o", "lse"],  // kernel parameters, in order
//     "compiler": "flashmlir-0.1+..." // (optional)
//   }
//
// (JSON has no comments: those above are this page's.) Integers are JSON
// integers, flags true/false, scale and softcap numbers. Optional flags:
// "runtime_shapes", "varlen", "deterministic" (default false),
// "rows_per_warp" (informational), "out_dtype" (an e4m3 kernel's output
// type). Every key has one JSON type and range; an unknown key, a key set
// twice, a value of another type or out of range (no narrowing: 1.0 is no
// integer, 2^63 no int64) are errors that name the key's path, as are
// syntax errors (with their byte offset).
//
// A backward kernel set ("kind": "backward") is one module with three
// kernels: `entry` (args q,k,v,do,lse,delta,dq_acc,dk,dv) and the objects
// "pre" (delta = rowsum(dO*O), dq_acc = 0; args o,do,delta,dq_acc) and
// "post" (dq = cast(dq_acc); args dq_acc,dq), each with the five launch
// keys entry, grid, block, shared_bytes and args, launched pre, main, post
// on one stream. "pre" and "post" are required for a backward kernel and
// rejected for a forward one.
//
// A quantization ("kind": "quantize": a function of one fa.quantize,
// compiled by fa-convert-quantize-to-gpu) has its own keys instead of the
// attention's: dtype (bf16 or f16, the input's), batch, heads, groups (a
// divisor of heads: one descale per (batch, group)), seq, head_dim,
// rotation_seed (optional: the Hadamard rotation's seed), the main launch
// (args x,amax,out,descale: the scale kernel) and "pre" (args x,amax: the
// amax kernel), launched pre, main after amax ([batch, groups] i32) is
// zeroed. x is [batch, heads, seq, head_dim], out the same in e4m3,
// descale [batch, groups] f32. heads, groups and seq are stored in headsQ,
// headsKV and seqQ (seqKV = seqQ, headDimV = headDim).
//
// A kernel parameter is a device pointer (u64) to a dense row-major tensor:
// q [B,Hq,Nq,D], k [B,Hkv,Nk,D], v [B,Hkv,Nk,Dv], o [B,Hq,Nq,Dv] (all of
// `dtype`), lse [B,Hq,Nq] (f32); backward also do like o, dq like q, dk like
// k, dv like v. Shapes and flags are baked into the kernel: one kernel per
// configuration.
//
// A parameter named `tmap_<x>` is instead a TMA descriptor (a 128-byte
// CUtensorMap passed by value: `.param .align 64 .b8 tmap_<x>[128]`, a
// __grid_constant__) that the runtime encodes per launch from tensor x's
// pointer. Each one needs an entry `"<x>": [rows, cols]` in the object
// `tensor_maps` (x one of q, k, v, o; backward also do, dq, dk, dv; rows
// and cols in [1, 256]): the map views x as [B, heads, seq, dim] with boxes
// of `rows` sequence rows by `cols` columns, 128-byte swizzle and
// out-of-bounds elements read as zero (attentionTileMap() in TensorMap.h).
// Every entry's `tmap_<x>` must be a parameter of some launch.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_METADATA_H
#define FA_RUNTIME_METADATA_H

#include "fa/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa::rt {

enum class KernelKind { Forward, Backward, Quantize };
/// Element types: E4M3 (FP8, f8E4M3FN) for a forward's inputs only, whose
/// output is BF16 or F16 (`out_dtype`).
enum class DType { BF16, F16, E4M3 };

/// "forward" / "backward" / "quantize"
const char *toString(KernelKind kind);
const char *toString(DType dtype);     ///< "bf16" / "f16" / "e4m3"
/// Bytes per element (2; 1 for E4M3).
size_t elementSize(DType dtype);

/// A CUDA launch dimension triple.
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t product() const { return uint64_t(x) * y * z; }
};

/// One kernel launch of a kernel set: symbol, launch shape, parameters.
struct LaunchSpec {
  std::string entry; ///< Kernel symbol name.
  Dim3 grid;
  /// A runtime-shapes forward whose blocks loop over the tiles
  /// (`"persistent_blocks"`, fagpu-persistent-grid): a call launches
  /// min(persistentBlocks, tiles) blocks along x. 0: a block per tile.
  int64_t persistentBlocks = 0;
  Dim3 block;
  uint32_t sharedBytes = 0;      ///< Dynamic shared memory per block.
  std::vector<std::string> args; ///< Parameter names, in order.
  bool hasArg(std::string_view name) const;
};

/// A `tensor_maps` entry `"<tensor>": [rows, cols]`: kernel parameter
/// `tmap_<tensor>` is a CUtensorMap over `tensor` with rows x cols boxes.
struct TensorMapParam {
  std::string tensor; ///< q, k, v, o, do, dq, dk, dv or dq_acc.
  uint32_t rows = 0;  ///< Box height in sequence rows, [1, 256].
  uint32_t cols = 0;  ///< Box width in elements of the last dim, [1, 256].

  /// The kernel parameter it describes: "tmap_<tensor>".
  std::string paramName() const { return "tmap_" + tensor; }
  /// The entry in messages and configString(): "<tensor>:<rows>x<cols>".
  std::string toString() const;
};

/// The parsed contents of a .meta file.
struct KernelMetadata {
  KernelKind kind = KernelKind::Forward;
  std::string entry; ///< Kernel symbol name.
  std::string chip;  ///< "sm_90", "sm_90a", ...
  DType dtype = DType::BF16;
  /// O's element type: dtype, or for FP8 inputs `out_dtype` (bf16 / f16).
  DType outDtype = DType::BF16;
  bool isFP8() const { return dtype == DType::E4M3; }

  int64_t batch = 0;
  int64_t headsQ = 0;
  int64_t headsKV = 0;
  int64_t seqQ = 0;
  int64_t seqKV = 0;
  int64_t headDim = 0;
  int64_t headDimV = 0;

  double scale = 0.0;
  bool causal = false;
  int64_t windowLeft = -1;  ///< -1: unbounded (any negative is stored as -1).
  int64_t windowRight = -1; ///< -1: unbounded.
  double softcap = 0.0;     ///< 0: none.

  /// Runtime shapes (`"runtime_shapes": true`): one kernel (set) for every
  /// batch and pair of sequence lengths. batch, seqQ, seqKV and grid
  /// are then the call's, 0 here until instantiate() fills them in.
  bool runtimeShapes = false;
  /// Packed sequences (`"varlen": true`, with runtime_shapes): the kernel takes
  /// cu_seqlens_q / cu_seqlens_k (int32, sequences + 1 running offsets into
  /// rows of batch-1 tensors of seq_q / seq_kv rows); the grid is
  /// (ceil(maxSeqQ / block_q), heads_q, sequences). `sequences` and
  /// `maxSeqQ` are the call's, 0 until instantiate() fills them in.
  bool varlen = false;
  /// maxSeqKV: the longest key sequence, which sizes a varlen backward's
  /// grid (ceil(maxSeqKV / block_kv), heads_kv, sequences).
  int64_t sequences = 0, maxSeqQ = 0, maxSeqKV = 0;
  /// A deterministic backward (`"deterministic": true`): its main kernel adds
  /// dQ in KV-block order, taking turns on `dq_turns` (i32, one per batch,
  /// query head and Q block of block_q rows; zero before the launch).
  bool deterministic = false;

  /// A quantization's Hadamard rotation (`rotation_seed`): whether it
  /// rotates, and with which seed.
  bool rotated = false;
  int64_t rotationSeed = 0;

  int64_t blockQ = 0;      ///< Informational; 0 if absent.
  int64_t blockKV = 0;     ///< Informational; 0 if absent.
  int64_t rowsPerWarp = 0; ///< Informational; 0 if absent.

  Dim3 grid;
  /// A runtime-shapes forward whose blocks loop over the tiles
  /// (`"persistent_blocks"`, fagpu-persistent-grid): a call launches
  /// min(persistentBlocks, tiles) blocks along x. 0: a block per tile.
  int64_t persistentBlocks = 0;
  Dim3 block;
  uint32_t sharedBytes = 0;      ///< Dynamic shared memory per block.
  std::vector<std::string> args; ///< Parameter names, in order.
  std::string compiler;          ///< Compiler version that made it; optional.
  /// The `tmap_<x>` parameters of all launches, in the canonical tensor order
  /// q, k, v, o, do, dq, dk, dv (not the order written). Empty: none.
  std::vector<TensorMapParam> tensorMaps;

  /// Backward ("pre" / "post" objects; a quantization: "pre"): the kernel
  /// launched before `entry` (delta = rowsum(dO*O), dq_acc = 0) and the one
  /// after it (dq = cast(dq_acc)). Empty for a forward kernel.
  LaunchSpec pre, post;

  /// The main kernel's launch (entry, grid, block, sharedBytes, args).
  LaunchSpec mainLaunch() const;
  /// Every launch, in launch order: forward {main}; backward {pre, main,
  /// post}; quantize {pre, main}.
  std::vector<LaunchSpec> launches() const;

  bool hasWindow() const { return windowLeft >= 0 || windowRight >= 0; }
  bool hasSoftcap() const { return softcap > 0.0; }
  bool hasArg(std::string_view name) const;
  /// The `tensor_maps` entry of kernel parameter `param` ("tmap_q"), or
  /// null if `param` is not a tensor map parameter.
  const TensorMapParam *findTensorMap(std::string_view param) const;

  /// The metadata of one call of batch `batch` and lengths `seqQ`, `seqKV`.
  /// A static kernel's is its own (the call is validated against it later).
  /// A runtime-shapes kernel's has batch and lengths set, the grid
  /// (ceil(seqQ / block_q), heads_q, batch), or with persistentBlocks
  /// (min(persistentBlocks, the product of those), 1, 1), and runtimeShapes
  /// off, so that
  /// the parameters `batch`, `seq_q` and `seq_kv` have values; errors for
  /// lengths below 1 or a grid past the hardware's limits. A varlen
  /// kernel's call is (1, total query rows, total key rows) and its
  /// `sequences` and longest query sequence `maxSeqQ` size the grid (a
  /// varlen backward's: the longest key sequence `maxSeqKV`; its row
  /// kernels' grids are (ceil(seqQ / warps a block), heads_q, 1)).
  StatusOr<KernelMetadata> instantiate(int64_t batch, int64_t seqQ,
                                       int64_t seqKV, int64_t sequences = 0,
                                       int64_t maxSeqQ = 0,
                                       int64_t maxSeqKV = 0) const;

  /// The compute capability named by `chip` as major*10+minor ("sm_90a" ->
  /// 90), or -1 if `chip` is malformed.
  int chipVersion() const;
  /// Whether `chip` carries an architecture-specific suffix ("sm_90a",
  /// "sm_100f"): such code only runs on exactly that architecture (family).
  bool chipIsArchSpecific() const;

  /// A canonical one-line rendering of every field (fixed key order, exact
  /// number formatting). Two metadata objects describe the same kernel ABI iff
  /// their config strings are equal; the kernel cache uses it as part of its
  /// key.
  std::string configString() const;
};

/// Whether `name` is a size parameter of a kernel with runtime shapes
/// ("batch", "seq_q", "seq_kv"; varlen: "seq_offsets", the sequences + 1
/// entries of cu_seqlens): a 64-bit integer passed by value.
bool isSizeParameter(std::string_view name);

/// The largest .meta text parseKernelMetadata() reads (the compiler's are a
/// few KiB): a file can nest no deeper, nor hold more, than this allows.
constexpr size_t kMaxMetadataBytes = 65536;

/// Parses .meta text (JSON). Never throws. On error, `out` is unspecified and
/// the message locates the problem by its key path, e.g. "\"foo\": unknown
/// key", "\"grid\"[1]: expected an integer in [1, 65535], got -3",
/// "missing required keys of a forward kernel: \"entry\", \"grid\"", "not
/// valid JSON at byte 12: ...". Also checks consistency between keys
/// (heads_q a multiple of heads_kv, forward kernels taking q, k, v and o,
/// each `tmap_<x>` parameter described by a `tensor_maps` entry and each
/// entry used).
Status parseKernelMetadata(std::string_view text, KernelMetadata &out);

/// Reads and parses a .meta file; errors are prefixed with the path. `text`,
/// if given, receives the file's text.
Status readKernelMetadataFile(const std::string &path, KernelMetadata &out,
                              std::string *text = nullptr);

/// Reads a whole file into `out` (binary-safe).
Status readFile(const std::string &path, std::string &out);

} // namespace fa::rt

#endif // FA_RUNTIME_METADATA_H
