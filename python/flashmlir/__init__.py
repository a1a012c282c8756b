"""flashmlir: FlashMLIR's attention kernels from Python.

A ctypes binding of libFlashMLIR.so (the C API, include/fa-c/FlashMLIR.h):
`Config`, `validate(config)`, `compile(config) -> Kernel` and, when PyTorch is
importable, `attention(q, k, v, ...)` with autograd (flashmlir.torch_ops).
No dependencies beyond the standard library (torch is optional).
"""

import ctypes
import dataclasses
import json
import numbers
import threading
import warnings
from typing import Optional

from . import _capi

__all__ = ["Config", "QuantizeConfig", "Kernel", "FlashMLIRError", "FlashMLIRWarning",
           "compile", "validate",
           "precompile", "compile_unloaded", "library_path", "compiler_version"]


class FlashMLIRError(RuntimeError):
    """An error reported by libFlashMLIR (status name and message)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class FlashMLIRWarning(UserWarning):
    """A problem that did not stop the call, e.g. a kernel cache directory
    that cannot be written or that others can write (kernels are then
    compiled in every process), or a cache entry that was damaged, another
    key's or did not match the config, and was rebuilt."""


_lib = None
_lib_lock = threading.Lock()


def _library():
    global _lib
    lib = _lib  # loaded once; read without the lock on every launch
    if lib is not None:
        return lib
    with _lib_lock:
        if _lib is None:
            try:
                _lib = _capi.load()
            except OSError as e:
                raise FlashMLIRError(str(e)) from None
        return _lib


def library_path():
    """The path of the loaded libFlashMLIR.so."""
    return _library()._flashmlir_path


def compiler_version():
    return _library().faCompilerVersion().decode()


def _check(status, message=None):
    if status != _capi.SUCCESS:
        lib = _library()
        if message is None:
            message = lib.faGetLastError().decode(errors="replace")
        name = lib.faStatusString(status).decode()
        raise FlashMLIRError("%s: %s" % (name, message), status)


_DTYPES = {"bf16": _capi.DTYPE_BF16, "bfloat16": _capi.DTYPE_BF16,
           "f16": _capi.DTYPE_F16, "fp16": _capi.DTYPE_F16,
           "float16": _capi.DTYPE_F16, "half": _capi.DTYPE_F16,
           "f32": _capi.DTYPE_F32, "fp32": _capi.DTYPE_F32,
           "float32": _capi.DTYPE_F32, "float": _capi.DTYPE_F32,
           "e4m3": _capi.DTYPE_E4M3, "float8_e4m3fn": _capi.DTYPE_E4M3}
# O's types of FP8 (e4m3) inputs.
_OUT_DTYPES = {"bf16": _capi.DTYPE_BF16, "bfloat16": _capi.DTYPE_BF16,
               "f16": _capi.DTYPE_F16, "float16": _capi.DTYPE_F16}


_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


def _check_int(name, value):
    """Raises unless `value` is an integer (not a bool) that fits the C API's
    int64_t field."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("Config.%s must be an integer, got %r" % (name, value))
    if not _INT64_MIN <= int(value) <= _INT64_MAX:
        raise ValueError("Config.%s = %d does not fit in 64 bits"
                         % (name, value))


@dataclasses.dataclass(frozen=True)
class Config:
    """One attention problem: q [batch, heads_q, seq_q, head_dim], k/v
    [batch, heads_kv, seq_kv, head_dim(_v)]. Hashable: kernels are cached per
    config."""
    dtype: str = "bf16"
    batch: int = 1
    heads_q: int = 1
    heads_kv: Optional[int] = None  # None: heads_q
    seq_q: int = 128
    seq_kv: Optional[int] = None    # None: seq_q
    head_dim: int = 64
    head_dim_v: Optional[int] = None  # None: head_dim
    scale: Optional[float] = None   # None: 1/sqrt(head_dim)
    causal: bool = False
    window: Optional[tuple] = None  # (left, right); -1 = unbounded side
    softcap: Optional[float] = None
    block_q: int = 0                # 0: the compiler's default
    block_kv: int = 0
    chip: Optional[str] = None      # None: the device's (sm_90 offline)
    # One forward kernel for every batch and pair of lengths (sm_90): batch,
    # seq_q and seq_kv are then each launch's (Kernel.forward(shape=...)).
    runtime_shapes: bool = False
    # The backward's gradients bitwise equal run to run (dQ added in a fixed
    # order; sm_90's WGMMA backward). The forward is deterministic anyway.
    deterministic: bool = False
    # Packed sequences (FlashAttention's varlen; sm_90's forward): one kernel
    # for every batch of sequences (Kernel.forward_varlen); batch, seq_q and
    # seq_kv are ignored.
    varlen: bool = False
    # The backward also takes the gradient of lse (a loss that reads lse;
    # Kernel.backward_launch(dlse=...)), folded into its delta.
    grad_lse: bool = False
    # O's type with dtype "e4m3" (FP8 inputs, Kernel.forward_fp8): bf16 or
    # f16; other dtypes' O is their own type.
    out_dtype: str = "bf16"

    def __post_init__(self):
        # ctypes would wrap an out-of-range int, truncate a float and take
        # any object's truth value: check each field's type and range here,
        # naming it, before any of that can happen.
        for name in ("batch", "heads_q", "seq_q", "head_dim", "block_q",
                     "block_kv"):
            _check_int(name, getattr(self, name))
        for name in ("heads_kv", "seq_kv", "head_dim_v"):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name))
        for name in ("scale", "softcap"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or
                                      not isinstance(value, numbers.Real)):
                raise TypeError("Config.%s must be a number or None, got %r"
                                % (name, value))
        if not isinstance(self.causal, bool) and not (
                isinstance(self.causal, numbers.Integral) and
                self.causal in (0, 1)):
            raise TypeError("Config.causal must be True or False, got %r"
                            % (self.causal,))
        if self.window is not None:
            if not isinstance(self.window, (tuple, list)) or \
                    len(self.window) != 2:
                raise TypeError("Config.window must be (left, right) or None,"
                                " got %r" % (self.window,))
            for side, value in zip(("left", "right"), self.window):
                if value is not None:
                    _check_int("window " + side, value)
        for name in ("runtime_shapes", "deterministic", "varlen", "grad_lse"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError("Config.%s must be True or False, got %r"
                                % (name, getattr(self, name)))
        out = str(self.out_dtype).replace("torch.", "").lower()
        if out not in _OUT_DTYPES:
            raise ValueError("Config.out_dtype must be 'bf16' or 'f16', got %r"
                             % (self.out_dtype,))
        if self.chip is not None and not isinstance(self.chip, str):
            raise TypeError("Config.chip must be a string such as 'sm_90' or "
                            "None, got %r" % (self.chip,))

    def to_c(self):
        name = str(self.dtype).replace("torch.", "").lower()
        if name not in _DTYPES:
            raise FlashMLIRError("unsupported dtype %r: the GPU kernels take "
                                 "bf16, f16 or e4m3" % (self.dtype,),
                                 _capi.ERROR_INVALID_ARGUMENT)
        c = _capi.faConfig()
        _check(_library().faConfigInit(ctypes.byref(c)))
        c.dtype = _DTYPES[name]
        c.causal = 1 if self.causal else 0
        c.batch = int(self.batch)
        c.heads_q = int(self.heads_q)
        c.heads_kv = int(self.heads_q if self.heads_kv is None
                         else self.heads_kv)
        c.seq_q = int(self.seq_q)
        c.seq_kv = int(self.seq_q if self.seq_kv is None else self.seq_kv)
        c.head_dim = int(self.head_dim)
        c.head_dim_v = int(self.head_dim if self.head_dim_v is None
                           else self.head_dim_v)
        c.scale = float(self.scale) if self.scale is not None else 0.0
        if self.window is not None:
            left, right = self.window
            c.window_left = -1 if left is None else int(left)
            c.window_right = -1 if right is None else int(right)
        c.softcap = float(self.softcap) if self.softcap is not None else 0.0
        c.block_q = int(self.block_q)
        c.block_kv = int(self.block_kv)
        c.chip = self.chip.encode() if self.chip else None
        c.runtime_shapes = 1 if self.runtime_shapes else 0
        c.deterministic = 1 if self.deterministic else 0
        c.varlen = 1 if self.varlen else 0
        c.grad_lse = 1 if self.grad_lse else 0
        c.out_dtype = _OUT_DTYPES[str(self.out_dtype).replace("torch.", "")
                                  .lower()]
        return c

    def without_lengths(self):
        """The config a runtime-shapes kernel is cached under: batch and
        lengths dropped (they are each launch's)."""
        if not (self.runtime_shapes or self.varlen):
            return self
        return dataclasses.replace(self, batch=1, seq_q=1, seq_kv=None)


@dataclasses.dataclass(frozen=True)
class QuantizeConfig:
    """fa.quantize of x [batch, heads, seq, head_dim] (bf16 or f16) to e4m3
    with one float32 descale per (batch, group of heads / groups heads),
    the rows rotated first by the Hadamard rotation of `rotation_seed`
    (None: not rotated; FlashAttention 3's incoherent processing rotates Q
    and K with one seed). Compiles to a kernel whose Kernel.quantize runs
    it; flashmlir.quantize_fp8 on tensors."""
    dtype: str = "bf16"
    batch: int = 1
    heads: int = 1
    groups: int = 1
    seq: int = 128
    head_dim: int = 128
    rotation_seed: Optional[int] = None
    chip: Optional[str] = None

    def __post_init__(self):
        for name in ("batch", "heads", "groups", "seq", "head_dim"):
            _check_int(name, getattr(self, name))
        if self.rotation_seed is not None:
            _check_int("rotation_seed", self.rotation_seed)
        if self.chip is not None and not isinstance(self.chip, str):
            raise TypeError("QuantizeConfig.chip must be a string such as "
                            "'sm_90' or None, got %r" % (self.chip,))

    def to_c(self):
        name = str(self.dtype).replace("torch.", "").lower()
        if name not in ("bf16", "bfloat16", "f16", "float16"):
            raise FlashMLIRError("unsupported dtype %r to quantize: bf16 or "
                                 "f16" % (self.dtype,),
                                 _capi.ERROR_INVALID_ARGUMENT)
        c = _capi.faConfig()
        _check(_library().faConfigInit(ctypes.byref(c)))
        c.dtype = _DTYPES[name]
        c.batch = int(self.batch)
        c.heads_q = int(self.heads)
        c.heads_kv = int(self.groups)
        c.seq_q = c.seq_kv = int(self.seq)
        c.head_dim = c.head_dim_v = int(self.head_dim)
        c.rotate = 0 if self.rotation_seed is None else 1
        c.rotation_seed = 0 if self.rotation_seed is None \
            else int(self.rotation_seed)
        c.chip = self.chip.encode() if self.chip else None
        return c

    def without_lengths(self):
        return self


def _direction(backward, config=None):
    if isinstance(config, QuantizeConfig):
        return _capi.QUANTIZE
    return _capi.BACKWARD if backward else _capi.FORWARD


def validate(config, backward=False):
    """Runs the compiler's checks (no GPU needed); raises FlashMLIRError."""
    c = config.to_c()
    _check(_library().faValidateConfig(ctypes.byref(c),
                                       _direction(backward, config)))


class Kernel:
    """A compiled kernel (forward, or the backward kernel set)."""

    def __init__(self, handle, config, backward):
        self._handle = ctypes.c_void_p(handle)
        self.config = config
        self.backward = backward

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h is not None and h.value and _lib is not None:
            _lib.faKernelDestroy(h)
            self._handle = None

    @property
    def handle(self):
        return self._handle

    @property
    def metadata(self):
        """The launch metadata (the .meta JSON, docs/runtime.md) as text."""
        text = _library().faKernelMetadata(self._handle)
        if text is None:
            _check(_capi.ERROR_INVALID_HANDLE)
        return text.decode()

    @property
    def tensor_maps(self):
        """Names of the tensors the kernel reads through TMA descriptors
        (these may be strided views: D contiguous, other strides multiples
        of 16 bytes)."""
        maps = getattr(self, "_tensor_maps", None)
        if maps is None:
            maps = frozenset(self.metadata_dict().get("tensor_maps", {}))
            self._tensor_maps = maps
        return maps

    def metadata_dict(self):
        """The launch metadata as a dict: integers, booleans and lists as
        such; a backward's kernels under "pre" and "post"."""
        return json.loads(self.metadata)

    @property
    def cache_hit(self):
        return bool(_library().faKernelCacheHit(self._handle))

    def workspace_bytes(self, shape=None):
        """The backward's workspace; shape: (batch, seq_q, seq_kv) of a call
        of a kernel with runtime shapes."""
        n = ctypes.c_uint64(0)
        if shape is None:
            _check(_library().faBackwardWorkspaceBytes(self._handle,
                                                       ctypes.byref(n)))
        else:
            batch, seq_q, seq_kv = (int(x) for x in shape)
            _check(_library().faBackwardWorkspaceBytesShape(
                self._handle, batch, seq_q, seq_kv, ctypes.byref(n)))
        return n.value

    def quantize_workspace_bytes(self):
        """A quantization kernel's workspace (4 bytes per (batch, group))."""
        n = ctypes.c_uint64(0)
        _check(_library().faQuantizeWorkspaceBytes(self._handle,
                                                   ctypes.byref(n)))
        return n.value

    def quantize(self, x, out, descale, workspace, stream=0):
        """Launches a quantization kernel (QuantizeConfig) on device
        pointers: x to out (e4m3 bytes) and descale (float32 [batch,
        groups]); workspace: quantize_workspace_bytes() bytes."""
        _check(_library().faQuantize(self._handle, x, out, descale, workspace,
                                     stream))

    def forward(self, q, k, v, o, lse, strides=None, stream=0, shape=None):
        """Launches the forward on device pointers (ints). shape: (batch,
        seq_q, seq_kv) of this launch, needed by a kernel with runtime
        shapes; None: the kernel's own."""
        s = ctypes.byref(strides) if strides is not None else None
        if shape is None:
            status = _library().faAttentionForward(self._handle, q, k, v, o,
                                                   lse, s, stream)
        else:
            status = _library().faAttentionForwardShape(
                self._handle, int(shape[0]), int(shape[1]), int(shape[2]), q,
                k, v, o, lse, s, stream)
        if status:
            _check(status)

    def forward_fp8(self, q, k, v, o, lse, q_descale, k_descale, v_descale,
                    strides=None, stream=0, shape=None):
        """Launches an FP8 (Config dtype "e4m3") forward on device pointers
        (ints): e4m3 q, k, v, o in the config's out_dtype, and the f32
        [B, Hkv] descales of q, k and v. shape: (batch, seq_q, seq_kv) of a
        kernel with runtime shapes; None: the kernel's own."""
        s = ctypes.byref(strides) if strides is not None else None
        batch, seq_q, seq_kv = (0, 0, 0) if shape is None else \
            (int(x) for x in shape)
        _check(_library().faAttentionForwardFP8(
            self._handle, batch, seq_q, seq_kv, q, k, v, o, lse, q_descale,
            k_descale, v_descale, s, stream))

    def forward_varlen(self, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k,
                       sequences, max_seqlen_q, total_q, total_kv,
                       strides=None, stream=0):
        """Launches a varlen forward on device pointers (ints): `sequences`
        packed sequences in [1, H, total, D] tensors, their int32 offsets at
        cu_seqlens_q / cu_seqlens_k, the longest query sequence
        max_seqlen_q."""
        s = ctypes.byref(strides) if strides is not None else None
        _check(_library().faAttentionForwardVarlen(
            self._handle, int(total_q), int(total_kv), int(sequences),
            int(max_seqlen_q), q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, s,
            stream))

    def workspace_bytes_varlen(self, total_q):
        """The workspace of a varlen backward call on total_q packed query
        rows."""
        n = ctypes.c_uint64(0)
        _check(_library().faBackwardWorkspaceBytesVarlen(
            self._handle, int(total_q), ctypes.byref(n)))
        return n.value

    def backward_varlen(self, q, k, v, o, dout, lse, dq, dk, dv,
                        cu_seqlens_q, cu_seqlens_k, workspace, sequences,
                        max_seqlen_q, max_seqlen_k, total_q, total_kv,
                        strides=None, stream=0, dlse=0):
        """Launches a varlen backward kernel set on device pointers (ints):
        dense [1, H, total, D] tensors, the sequences as forward_varlen's,
        the longest key sequence max_seqlen_k. dlse: the gradient of lse
        (a kernel set compiled with Config.grad_lse), else 0."""
        if dlse:
            self._backward_call(strides, stream, batch=1, seq_q=total_q,
                                seq_kv=total_kv, sequences=sequences,
                                max_seqlen_q=max_seqlen_q,
                                max_seqlen_k=max_seqlen_k,
                                cu_seqlens_q=cu_seqlens_q,
                                cu_seqlens_k=cu_seqlens_k, q=q, k=k, v=v,
                                o=o, dout=dout, lse=lse, dq=dq, dk=dk, dv=dv,
                                dlse=dlse, workspace=workspace)
            return
        s = ctypes.byref(strides) if strides is not None else None
        _check(_library().faAttentionBackwardVarlen(
            self._handle, int(total_q), int(total_kv), int(sequences),
            int(max_seqlen_q), int(max_seqlen_k), q, k, v, o, dout, lse, dq,
            dk, dv, cu_seqlens_q, cu_seqlens_k, workspace, s, stream))

    def backward_launch(self, q, k, v, o, dout, lse, dq, dk, dv, workspace,
                        strides=None, stream=0, shape=None, dlse=0):
        """Launches the backward kernel set on device pointers (ints).
        shape: (batch, seq_q, seq_kv) of this launch, needed by a kernel
        with runtime shapes; None: the kernel's own. dlse: the gradient of
        lse (a kernel set compiled with Config.grad_lse), else 0."""
        if dlse:
            batch, seq_q, seq_kv = shape if shape is not None else (0, 0, 0)
            self._backward_call(strides, stream, batch=batch, seq_q=seq_q,
                                seq_kv=seq_kv, q=q, k=k, v=v, o=o, dout=dout,
                                lse=lse, dq=dq, dk=dk, dv=dv, dlse=dlse,
                                workspace=workspace)
            return
        s = ctypes.byref(strides) if strides is not None else None
        if shape is None:
            _check(_library().faAttentionBackward(
                self._handle, q, k, v, o, dout, lse, dq, dk, dv, workspace, s,
                stream))
            return
        batch, seq_q, seq_kv = (int(x) for x in shape)
        _check(_library().faAttentionBackwardShape(
            self._handle, batch, seq_q, seq_kv, q, k, v, o, dout, lse, dq, dk,
            dv, workspace, s, stream))

    def _backward_call(self, strides, stream, **fields):
        """faAttentionBackwardCall with `fields` of faBackwardCall."""
        call = _capi.faBackwardCall(**{n: int(v) for n, v in fields.items()})
        s = ctypes.byref(strides) if strides is not None else None
        _check(_library().faAttentionBackwardCall(
            self._handle, ctypes.byref(call), s, stream))


class Context:
    """Owns a kernel cache directory (None: $FLASHMLIR_CACHE_DIR or
    ~/.cache/flashmlir) and the CUDA device its kernels are compiled for
    and run on (an ordinal, as torch.device("cuda", device) names it)."""

    def __init__(self, cache_dir=None, device=0):
        if isinstance(device, bool) or not isinstance(device, int):
            raise TypeError("flashmlir.Context: device must be an int "
                            "ordinal, got %r" % (device,))
        h = ctypes.c_void_p()
        arg = cache_dir.encode() if cache_dir else None
        _check(_library().faContextCreateOnDevice(arg, device,
                                                  ctypes.byref(h)))
        self._handle = h
        self._warn()

    def _warn(self):
        """Issues the last call's non-fatal problem as a FlashMLIRWarning."""
        message = _library().faContextGetLastWarning(self._handle)
        if message:
            warnings.warn(message.decode(errors="replace"), FlashMLIRWarning,
                          stacklevel=3)

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h is not None and h.value and _lib is not None:
            _lib.faContextDestroy(h)
            self._handle = None

    @property
    def cache_dir(self):
        return _library().faContextCacheDir(self._handle).decode()

    @property
    def device(self):
        return _library().faContextDevice(self._handle)

    def compile(self, config, backward=False):
        c = config.to_c()
        out = ctypes.c_void_p()
        _check(_library().faCompile(self._handle, ctypes.byref(c),
                                    _direction(backward, config),
                                    ctypes.byref(out)))
        self._warn()
        return Kernel(out.value, config, backward)

    def precompile(self, config, backward=False):
        """Compiles `config` into this cache (PTX), without a GPU, for
        config.chip (None: sm_90); compile() finds it on a device of that
        chip. Returns True if it was already cached."""
        c = config.to_c()
        hit = ctypes.c_int(0)
        _check(_library().faPrecompile(self._handle, ctypes.byref(c),
                                       _direction(backward, config),
                                       ctypes.byref(hit)))
        self._warn()
        return bool(hit.value)


_default_contexts = {}  # device ordinal -> Context
_kernels = {}
_kernels_lock = threading.Lock()


def default_context(device=0):
    """The process's context on CUDA device `device` (the default cache)."""
    with _kernels_lock:
        context = _default_contexts.get(device)
        if context is None:
            context = _default_contexts[device] = Context(device=device)
        return context


def compile(config, backward=False, device=0):
    """JIT-compiles (or fetches from the cache) the kernel of `config` and
    loads it on CUDA device `device` (config.chip None: that device's chip).
    Kernels are cached per (config, direction, device) in this process (a
    runtime-shapes kernel once for every batch and length). Raises
    FlashMLIRError (e.g. without a CUDA driver)."""
    config = config.without_lengths()
    key = (config, bool(backward), device)
    with _kernels_lock:
        kernel = _kernels.get(key)
    if kernel is not None:
        return kernel
    kernel = default_context(device).compile(config, backward)
    with _kernels_lock:
        return _kernels.setdefault(key, kernel)


def precompile(config, backward=False):
    """Context.precompile() on the default context's cache
    ($FLASHMLIR_CACHE_DIR or ~/.cache/flashmlir)."""
    return default_context().precompile(config, backward)


def compile_unloaded(config, backward=False):
    """Compiles to PTX without a GPU and returns a Kernel with metadata but no
    code (launches validate their arguments, then fail)."""
    c = config.to_c()
    out = ctypes.c_void_p()
    _check(_library().faCompileUnloaded(ctypes.byref(c),
                                        _direction(backward, config),
                                        ctypes.byref(out)))
    return Kernel(out.value, config, backward)


try:  # Optional PyTorch integration.
    import torch as _torch  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    _torch = None

if _torch is not None:
    from .torch_ops import attention, FlashAttentionFunction  # noqa: F401
    from .varlen import varlen_attention  # noqa: F401
    from .fp8 import attention_fp8, quantize_fp8  # noqa: F401
    __all__ += ["attention", "FlashAttentionFunction", "varlen_attention",
                "attention_fp8", "quantize_fp8"]
