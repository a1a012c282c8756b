"""ctypes bindings of libFlashMLIR.so (include/fa-c/FlashMLIR.h)."""

import ctypes
import os

LIBRARY_NAME = "libFlashMLIR.so"
API_VERSION = 10

# faStatus
SUCCESS = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_INVALID_HANDLE = 2
ERROR_COMPILE = 3
ERROR_DRIVER = 4
ERROR_LAUNCH = 5

DTYPE_BF16, DTYPE_F16, DTYPE_F32, DTYPE_E4M3 = 0, 1, 2, 3
FORWARD, BACKWARD, QUANTIZE = 0, 1, 2

c_int64_4 = ctypes.c_int64 * 4
c_int64_3 = ctypes.c_int64 * 3


class faConfig(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int32),
        ("causal", ctypes.c_int32),
        ("batch", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("seq_q", ctypes.c_int64),
        ("seq_kv", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("head_dim_v", ctypes.c_int64),
        ("scale", ctypes.c_double),
        ("window_left", ctypes.c_int64),
        ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_double),
        ("block_q", ctypes.c_int64),
        ("block_kv", ctypes.c_int64),
        ("chip", ctypes.c_char_p),
        ("runtime_shapes", ctypes.c_int32),
        ("deterministic", ctypes.c_int32),
        ("varlen", ctypes.c_int32),
        ("grad_lse", ctypes.c_int32),
        ("out_dtype", ctypes.c_int32),
        ("rotate", ctypes.c_int32),
        ("rotation_seed", ctypes.c_int64),
    ]


class faForwardStrides(ctypes.Structure):
    _fields_ = [("q", c_int64_4), ("k", c_int64_4), ("v", c_int64_4),
                ("o", c_int64_4), ("lse", c_int64_3)]


class faBackwardStrides(ctypes.Structure):
    _fields_ = [("q", c_int64_4), ("k", c_int64_4), ("v", c_int64_4),
                ("o", c_int64_4), ("dout", c_int64_4), ("dq", c_int64_4),
                ("dk", c_int64_4), ("dv", c_int64_4), ("lse", c_int64_3)]


class faBackwardCall(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in
                ("batch", "seq_q", "seq_kv", "sequences", "max_seqlen_q",
                 "max_seqlen_k")] + \
               [(name, ctypes.c_uint64) for name in
                ("cu_seqlens_q", "cu_seqlens_k", "q", "k", "v", "o", "dout",
                 "lse", "dq", "dk", "dv", "dlse", "workspace")]


def candidate_paths():
    """Where the library is looked for, in order."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = []
    env = os.environ.get("FLASHMLIR_LIBRARY")
    if env:
        paths.append(env)
    paths.append(os.path.join(here, LIBRARY_NAME))  # inside the package
    # Install tree: <prefix>/python/flashmlir -> <prefix>/lib.
    paths.append(os.path.join(here, "..", "..", "lib", LIBRARY_NAME))
    # Source tree: python/flashmlir -> build/lib.
    paths.append(os.path.join(here, "..", "..", "build", "lib", LIBRARY_NAME))
    return [os.path.normpath(p) for p in paths]


def _declare(lib):
    P = ctypes.c_void_p
    u64 = ctypes.c_uint64
    i64 = ctypes.c_int64
    i32 = ctypes.c_int
    cfg = ctypes.POINTER(faConfig)
    sigs = {
        "faGetApiVersion": (i32, []),
        "faCompilerVersion": (ctypes.c_char_p, []),
        "faGetLastError": (ctypes.c_char_p, []),
        "faStatusString": (ctypes.c_char_p, [i32]),
        "faConfigInit": (i32, [cfg]),
        "faValidateConfig": (i32, [cfg, i32]),
        "faContextCreate": (i32, [ctypes.c_char_p, ctypes.POINTER(P)]),
        "faContextCreateOnDevice": (i32, [ctypes.c_char_p, i32,
                                         ctypes.POINTER(P)]),
        "faContextDevice": (i32, [P]),
        "faContextDestroy": (i32, [P]),
        "faContextCacheDir": (ctypes.c_char_p, [P]),
        "faContextGetLastError": (ctypes.c_char_p, [P]),
        "faContextGetLastWarning": (ctypes.c_char_p, [P]),
        "faCompile": (i32, [P, cfg, i32, ctypes.POINTER(P)]),
        "faCompileUnloaded": (i32, [cfg, i32, ctypes.POINTER(P)]),
        "faPrecompile": (i32, [P, cfg, i32, ctypes.POINTER(i32)]),
        "faKernelDestroy": (i32, [P]),
        "faKernelMetadata": (ctypes.c_char_p, [P]),
        "faKernelDirection": (i32, [P]),
        "faKernelCacheHit": (i32, [P]),
        "faKernelGetLastError": (ctypes.c_char_p, [P]),
        "faBackwardWorkspaceBytes": (i32, [P, ctypes.POINTER(u64)]),
        "faAttentionForward": (i32, [P, u64, u64, u64, u64, u64,
                                     ctypes.POINTER(faForwardStrides), u64]),
        "faAttentionForwardShape": (i32, [P, i64, i64, i64, u64, u64, u64,
                                          u64, u64,
                                          ctypes.POINTER(faForwardStrides),
                                          u64]),
        "faAttentionForwardFP8": (i32, [P, i64, i64, i64] + [u64] * 8 +
                                  [ctypes.POINTER(faForwardStrides), u64]),
        "faAttentionForwardVarlen": (i32, [P, i64, i64, i64, i64] + [u64] * 7
                                     + [ctypes.POINTER(faForwardStrides),
                                        u64]),
        "faAttentionBackward": (i32, [P] + [u64] * 10 +
                                [ctypes.POINTER(faBackwardStrides), u64]),
        "faBackwardWorkspaceBytesVarlen": (i32, [P, i64,
                                                 ctypes.POINTER(u64)]),
        "faBackwardWorkspaceBytesShape": (i32, [P, i64, i64, i64,
                                                ctypes.POINTER(u64)]),
        "faAttentionBackwardShape": (i32, [P, i64, i64, i64] + [u64] * 10 +
                                     [ctypes.POINTER(faBackwardStrides),
                                      u64]),
        "faAttentionBackwardVarlen": (i32, [P] + [i64] * 5 + [u64] * 12 +
                                      [ctypes.POINTER(faBackwardStrides),
                                       u64]),
        "faQuantizeWorkspaceBytes": (i32, [P, ctypes.POINTER(u64)]),
        "faQuantize": (i32, [P, u64, u64, u64, u64, u64]),
        "faAttentionBackwardCall": (i32, [P, ctypes.POINTER(faBackwardCall),
                                          ctypes.POINTER(faBackwardStrides),
                                          u64]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def load():
    """Loads the first library found; raises OSError listing what was tried."""
    tried = []
    for path in candidate_paths():
        if not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            lib = _declare(ctypes.CDLL(path))
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        version = lib.faGetApiVersion()
        if version != API_VERSION:
            tried.append("%s (C API version %d, want %d)"
                         % (path, version, API_VERSION))
            continue
        lib._flashmlir_path = path
        return lib
    raise OSError("flashmlir: cannot load %s; tried: %s (set FLASHMLIR_LIBRARY)"
                  % (LIBRARY_NAME, "; ".join(tried)))
