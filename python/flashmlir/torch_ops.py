"""flashmlir.attention: FlashMLIR kernels on PyTorch CUDA tensors, with
autograd (the backward runs FlashMLIR's backward kernel set)."""

import dataclasses
import math
import os
from typing import List, Optional, Tuple

import torch

from . import Config, FlashMLIRError, _capi, compile as _compile

_TORCH_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}


def _check_inputs(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("flashmlir.attention: %s must be a torch.Tensor, "
                            "got %s" % (name, type(t).__name__))
        if t.device.type != "cuda":
            raise ValueError("flashmlir.attention: %s must be a CUDA tensor, "
                             "got device %s" % (name, t.device))
        if t.dim() != 4:
            raise ValueError("flashmlir.attention: %s must be 4-D (B, H, N, D),"
                             " got shape %s" % (name, tuple(t.shape)))
        if t.dtype not in _TORCH_DTYPES:
            raise TypeError("flashmlir.attention: %s has dtype %s; the kernels "
                            "take torch.bfloat16 or torch.float16"
                            % (name, t.dtype))
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError("flashmlir.attention: q, k, v dtypes differ: %s, %s, %s"
                        % (q.dtype, k.dtype, v.dtype))
    if not (q.device == k.device == v.device):
        raise ValueError("flashmlir.attention: q, k, v are on different "
                         "devices: %s, %s, %s" % (q.device, k.device, v.device))
    B, Hq, Nq, D = q.shape
    Bk, Hkv, Nk, Dk = k.shape
    Bv, Hv, Nv, Dv = v.shape
    if Bk != B or Bv != B:
        raise ValueError("flashmlir.attention: batch sizes differ: q %d, k %d, "
                         "v %d" % (B, Bk, Bv))
    if Dk != D:
        raise ValueError("flashmlir.attention: k head dim %d != q head dim %d"
                         % (Dk, D))
    if Hv != Hkv or Nv != Nk:
        raise ValueError("flashmlir.attention: k %s and v %s differ in heads or"
                         " sequence length" % (tuple(k.shape), tuple(v.shape)))
    if Hkv == 0 or Hq % Hkv != 0:
        raise ValueError("flashmlir.attention: query heads (%d) must be a "
                         "multiple of key/value heads (%d) for GQA/MQA"
                         % (Hq, Hkv))


# Per-call cost: the Config of a call's shapes and flags, and the kernel
# chosen for a config, are computed once (a tiny problem's call is all
# overhead; issue "thin call path").
_configs = {}
_choices = {}  # (config, runtime-shapes mode, device) -> (kernel, shape)


def _window(window):
    return None if window is None else (int(window[0]), int(window[1]))


def _config(q, k, v, causal, scale, window, softcap, deterministic=False):
    window = _window(window)
    key = (q.shape, v.shape, q.dtype, causal, scale, window, softcap,
           deterministic)
    config = _configs.get(key)
    if config is None:
        B, Hq, Nq, D = q.shape
        _, Hkv, Nk, Dv = v.shape
        config = Config(dtype=_TORCH_DTYPES[q.dtype], batch=B, heads_q=Hq,
                        heads_kv=Hkv, seq_q=Nq, seq_kv=Nk, head_dim=D,
                        head_dim_v=Dv,
                        scale=None if scale is None else float(scale),
                        causal=bool(causal), window=window,
                        softcap=None if not softcap else float(softcap),
                        deterministic=bool(deterministic))
        _configs[key] = config
    return config


# Runtime shapes: one forward kernel for every batch and length (sm_90).
# They cost 2-6 % against a kernel built for one shape (docs/perf), so by
# default ("auto") a problem gets a kernel for its first shape and the
# runtime-shapes kernel from its second shape on: a fixed shape runs at
# full speed, varying lengths compile once more instead of once per length.
# FLASHMLIR_RUNTIME_SHAPES=1 (always) or 0 (never) overrides (read once, by
# the first call that needs it: an environment lookup costs a call 1-2 us),
# as does attention(runtime_shapes=...).
_served = {}  # (runtime-shapes config, device) -> {(B, Nq, Nk): choice}
_no_runtime_shapes = set()  # (runtime-shapes config, device): no kernel


_environment_mode = []  # FLASHMLIR_RUNTIME_SHAPES's mode, once read


def _runtime_shapes_mode(asked):
    if asked is not None:
        return "1" if asked else "0"
    if not _environment_mode:
        mode = os.environ.get("FLASHMLIR_RUNTIME_SHAPES", "auto")
        _environment_mode.append(mode if mode in ("0", "1") else "auto")
    return _environment_mode[0]


def _compile_on(config, device, backward=False):
    """The kernel of `config` loaded on `device` (a CUDA torch.device)."""
    return _compile(config, backward=backward, device=device.index)


def _forward_kernel(config, device, asked):
    """The forward kernel for `config` on `device` and the shape to launch it
    with (None: the kernel's own)."""
    mode = _runtime_shapes_mode(asked)
    # A config's choice never changes once made (auto: its shape's entry).
    key = (config, mode, device.index)
    choice = _choices.get(key)
    if choice is not None:
        return choice
    choice = _choose_forward_kernel(config, device, mode)
    _choices[key] = choice
    return choice


def _choose_forward_kernel(config, device, mode):
    dynamic = dataclasses.replace(config, runtime_shapes=True)
    dynamic = (dynamic.without_lengths(), device.index)
    shape = (config.batch, config.seq_q,
             config.seq_q if config.seq_kv is None else config.seq_kv)
    served = _served.setdefault(dynamic, {})
    if shape in served and mode == "auto":
        return served[shape]
    use_dynamic = (mode == "1" or (mode == "auto" and served)) and \
        dynamic not in _no_runtime_shapes and \
        torch.cuda.get_device_capability(device) == (9, 0)
    choice = (_compile_on(config, device), None)
    if use_dynamic:
        try:
            choice = (_compile_on(dynamic[0], device), shape)
        except FlashMLIRError:  # e.g. a head dim the WGMMA kernel lacks
            _no_runtime_shapes.add(dynamic)
    served[shape] = choice
    return choice


def _in_place(t, mapped):
    """`t` as the kernel reads it: a strided view if the kernel reads it
    through a TMA descriptor that takes its strides (positive multiples of
    16 bytes, D contiguous; sizes of 1 never step), else dense."""
    if t.is_contiguous():
        return t
    if mapped and (t.stride(3) == 1 or t.shape[3] == 1) and \
            all(n == 1 or (s > 0 and s * t.element_size() % 16 == 0)
                for n, s in zip(t.shape[:3], t.stride()[:3])):
        return t
    return t.contiguous()


def _forward_strides(q, k, v, o, lse):
    s = _capi.faForwardStrides()
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        getattr(s, name)[:] = t.stride()
    s.lse[:] = lse.stride()
    return s


_RAW_STREAM = hasattr(torch._C, "_cuda_getCurrentRawStream")
if _RAW_STREAM:
    def _stream(t):
        """The current torch stream of t's device (a CUstream as an int).
        get_device(): the index without building a torch.device."""
        return torch._C._cuda_getCurrentRawStream(t.get_device())
else:  # pragma: no cover - older or other builds of torch
    def _stream(t):
        return torch.cuda.current_stream(t.device).cuda_stream


# lse of calls that neither return it nor record it for a backward:
# (device index, stream) -> float32 buffer the kernel writes and nobody
# reads. Calls on one stream run in order, so they may share one; a grown
# buffer's predecessors are kept alive, since a captured CUDA graph may
# still write into them.
_lse_scratch = {}
_lse_scratch_kept = []


def _lse_scratch_pointer(q, stream, rows):
    """The address of a scratch lse of `rows` floats on q's device."""
    key = (q.get_device(), stream)
    buffer = _lse_scratch.get(key)
    if buffer is None or buffer.numel() < rows:
        if buffer is not None:
            _lse_scratch_kept.append(buffer)
        buffer = torch.empty(max(rows, 2 * (0 if buffer is None else
                                            buffer.numel())),
                             dtype=torch.float32, device=q.device)
        _lse_scratch[key] = buffer
    return buffer.data_ptr()


def _attention_forward(q, k, v, config, runtime_shapes, choice=None):
    """o and lse of one call, and the q, k, v the kernel read. choice: the
    (kernel, launch shape) of _forward_kernel, if the caller has it."""
    kernel, shape = choice or _forward_kernel(config, q.device,
                                              runtime_shapes)
    dense = q.is_contiguous() and k.is_contiguous() and v.is_contiguous()
    if not dense:
        # Views (e.g. (B, N, H, D) memory as (B, H, N, D), slices of a
        # packed QKV tensor) are read in place where the kernel takes them
        # through TMA; copied otherwise.
        maps = kernel.tensor_maps
        q, k, v = (_in_place(q, "q" in maps), _in_place(k, "k" in maps),
                   _in_place(v, "v" in maps))
    o = torch.empty(q.shape[:3] + (v.shape[3],), dtype=q.dtype,
                    device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    # Dense tensors need no strides (the C API's NULL: row-major).
    strides = None if dense else _forward_strides(q, k, v, o, lse)
    # The library makes the kernel's device current for the launch only.
    kernel.forward(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                   lse.data_ptr(), strides=strides, stream=_stream(q),
                   shape=shape)
    return q, k, v, o, lse


def _lse_gradient_used(dlse):
    """Whether a backward must take dlse: an all-zero one (an lse nobody
    used) is left out; while a CUDA graph is captured nothing may wait for
    the device, so a given one is used as is."""
    return dlse is not None and (torch.cuda.is_current_stream_capturing() or
                                 bool(torch.any(dlse != 0)))


def _backward_gradients(config, q, k, v, o, lse, do, dlse, asked=None):
    """dq, dk, dv of <do, o> + <dlse, lse> (None where neither reaches).
    `asked`: attention()'s runtime_shapes. dlse goes into the backward's
    delta (a kernel set compiled with grad_lse): dS = P (dP - (D - dlse))."""
    # The backward kernels take dense tensors.
    q, k, v = (t.contiguous() for t in (q, k, v))
    if not _lse_gradient_used(dlse):
        dlse = None
    if do is None and dlse is None:
        return None, None, None
    if do is None:
        do = torch.zeros_like(o)
    elif do.dtype != q.dtype:
        do = do.to(q.dtype)
    if dlse is not None:
        config = dataclasses.replace(config, grad_lse=True)
        dlse = dlse.to(torch.float32).contiguous()
    return _launch_backward(config, q, k, v, o, do.contiguous(), lse, asked,
                            dlse)


class FlashAttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, config, runtime_shapes=None):
        q, k, v, o, lse = _attention_forward(q, k, v, config, runtime_shapes)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.config = config
        ctx.runtime_shapes = runtime_shapes
        # An unused lse then gets None as its gradient instead of a zero
        # tensor, and backward() need not read one back from the device.
        ctx.set_materialize_grads(False)
        return o, lse

    @staticmethod
    def backward(ctx, do, dlse):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward_gradients(ctx.config, q, k, v, o, lse, do,
                                         dlse, ctx.runtime_shapes)
        return dq, dk, dv, None, None


# The backward's runtime shapes: with runtime_shapes=True (or
# FLASHMLIR_RUNTIME_SHAPES=1) the backward runs one kernel set compiled for
# every batch and length (sm_90's WGMMA backward; not deterministic). By
# default ("auto") a problem's first shape gets a set of its own and its
# later shapes the runtime-shapes set where that runs as fast: without a
# mask band at head dims up to 128 (0.97-1.0 of a set built for the shape
# on the H200; causal hd128 0.87-0.91, docs/perf, twenty-fourth session).
_backward_choices = {}  # (config, mode, device) -> runtime-shapes set or None
_backward_shapes = {}  # (runtime-shapes config, device) -> shapes with sets
_no_runtime_shapes_backward = set()  # (config, device) whose set fails


def _runtime_shapes_backward_pays(config):
    """Whether the runtime-shapes backward runs as fast as a set built for
    the shape (measured: no mask band, head dims up to 128)."""
    return not config.causal and config.window is None and \
        max(config.head_dim, config.head_dim_v or config.head_dim) <= 128


def _runtime_shapes_backward(config, device, asked):
    """The runtime-shapes backward set that serves this call, or None (the
    call's shape gets a set of its own)."""
    mode = _runtime_shapes_mode(asked)
    # A config's choice never changes once made.
    key = (config, mode, device.index)
    if key not in _backward_choices:
        kernel = None
        dynamic = dataclasses.replace(config, runtime_shapes=True)
        dynamic = (dynamic.without_lengths(), device.index)
        shapes = _backward_shapes.setdefault(dynamic, set())
        shape = (config.batch, config.seq_q,
                 config.seq_q if config.seq_kv is None else config.seq_kv)
        wanted = mode == "1" or (
            mode == "auto" and bool(shapes - {shape}) and
            _runtime_shapes_backward_pays(config))
        if wanted and not config.deterministic and \
                dynamic not in _no_runtime_shapes_backward and \
                torch.cuda.get_device_capability(device) == (9, 0):
            try:
                kernel = _compile_on(dynamic[0], device, backward=True)
            except FlashMLIRError:  # e.g. a head dim the WGMMA lacks
                _no_runtime_shapes_backward.add(dynamic)
        if kernel is None:
            shapes.add(shape)
        _backward_choices[key] = kernel
    return _backward_choices[key]


def _launch_backward(config, q, k, v, o, do, lse, asked=None, dlse=None):
    """dq, dk, dv of <do, o> (+ <dlse, lse> with config.grad_lse) from the
    backward kernel set of `config`, or from the runtime-shapes set of its
    problem."""
    shape = None
    kernel = _runtime_shapes_backward(config, q.device, asked)
    if kernel is not None:
        shape = (q.shape[0], q.shape[2], k.shape[2])
    else:
        kernel = _compile_on(config, q.device, backward=True)
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    workspace = torch.empty(max(kernel.workspace_bytes(shape), 1),
                            dtype=torch.uint8, device=q.device)
    kernel.backward_launch(q.data_ptr(), k.data_ptr(), v.data_ptr(),
                           o.data_ptr(), do.data_ptr(), lse.data_ptr(),
                           dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                           workspace.data_ptr(), stream=_stream(q),
                           shape=shape,
                           dlse=dlse.data_ptr() if dlse is not None else 0)
    return dq, dk, dv


# torch.compile: the forward and the backward as torch custom ops
# (flashmlir::attention_forward, flashmlir::attention_backward) with fake
# implementations that give only the outputs' shapes, so that torch.compile
# traces through attention() without graph breaks and AOTAutograd sees the
# backward as one op. Eager calls keep the direct path above (the
# dispatcher's cost per call; issue "thin call path"); both run the same
# code.
_CUSTOM_OPS = hasattr(torch.library, "custom_op")


if _CUSTOM_OPS:
    @torch.library.custom_op("flashmlir::attention_forward", mutates_args=())
    def _forward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    causal: bool, scale: Optional[float],
                    window: Optional[List[int]], softcap: Optional[float],
                    runtime_shapes: Optional[bool], deterministic: bool
                    ) -> Tuple[torch.Tensor, torch.Tensor]:
        config = _config(q, k, v, causal, scale, window, softcap,
                         deterministic)
        _, _, _, o, lse = _attention_forward(q, k, v, config, runtime_shapes)
        return o, lse

    @_forward_op.register_fake
    def _(q, k, v, causal, scale, window, softcap, runtime_shapes,
          deterministic):
        o = q.new_empty(q.shape[:3] + (v.shape[3],))
        lse = q.new_empty(q.shape[:3], dtype=torch.float32)
        return o, lse

    @torch.library.custom_op("flashmlir::attention_backward", mutates_args=())
    def _backward_op(do: Optional[torch.Tensor], dlse: Optional[torch.Tensor],
                     q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     o: torch.Tensor, lse: torch.Tensor, causal: bool,
                     scale: Optional[float], window: Optional[List[int]],
                     softcap: Optional[float], deterministic: bool
                     ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        config = _config(q, k, v, causal, scale, window, softcap,
                         deterministic)
        dq, dk, dv = _backward_gradients(config, q, k, v, o, lse, do, dlse)
        # Dense, as the fake says (the kernels write dense gradients).
        return tuple(torch.zeros(t.shape, dtype=t.dtype, device=t.device)
                     if g is None else g
                     for g, t in ((dq, q), (dk, k), (dv, v)))

    @_backward_op.register_fake
    def _(do, dlse, q, k, v, o, lse, causal, scale, window, softcap,
          deterministic):
        # Dense whatever the inputs' strides: the backward kernels read
        # dense copies and write dense gradients.
        return tuple(t.new_empty(t.shape) for t in (q, k, v))

    def _setup_context(ctx, inputs, output):
        q, k, v, causal, scale, window, softcap, _, deterministic = inputs
        ctx.save_for_backward(q, k, v, *output)
        ctx.options = (causal, scale, window, softcap, deterministic)
        ctx.set_materialize_grads(False)

    def _backward_of_forward_op(ctx, do, dlse):
        if do is None and dlse is None:
            return (None,) * 9
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward_op(do, dlse, q, k, v, o, lse, *ctx.options)
        return dq, dk, dv, None, None, None, None, None, None

    _forward_op.register_autograd(_backward_of_forward_op,
                                  setup_context=_setup_context)


# Calls that passed the checks: _call_key -> _checked_call's tuple.
_checked_calls = {}


def _checked_call(q, v, config, choice):
    """What a repeat of a checked call needs: its config and kernel choice,
    the kernel's bound launch, o's and lse's shapes and lse's row count."""
    kernel, shape = choice
    lse_shape = tuple(q.shape[:3])
    return (config, choice, kernel.forward, shape,
            lse_shape + (v.shape[3],), lse_shape, math.prod(lse_shape))


def _launch_checked(q, k, v, checked, return_lse):
    """The thin call path: a repeat of a checked call on dense tensors. Only
    what differs call to call is computed: the outputs, the pointers and the
    stream (issue "thin call path": every line here costs each call)."""
    _, _, launch, shape, o_shape, lse_shape, rows = checked
    o = q.new_empty(o_shape)
    stream = torch._C._cuda_getCurrentRawStream(q.get_device()) \
        if _RAW_STREAM else _stream(q)
    if return_lse:
        lse = q.new_empty(lse_shape, dtype=torch.float32)
        launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
               lse.data_ptr(), None, stream, shape)
        return o, lse
    launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
           _lse_scratch_pointer(q, stream, rows), None, stream, shape)
    return o


def _call_key(q, k, v, causal, scale, window, softcap, deterministic,
              runtime_shapes):
    """What decides a call's checks, config and kernel (unhashable if an
    argument is), or None where it cannot be a key (tensor subclasses,
    flags of other types than the checks take)."""
    if type(q) is not torch.Tensor or type(k) is not torch.Tensor or \
            type(v) is not torch.Tensor or \
            (deterministic is not False and deterministic is not True) or \
            not (runtime_shapes is None or runtime_shapes is True or
                 runtime_shapes is False):
        return None
    # get_device(): the device's index (-1 on the CPU), without building a
    # torch.device per tensor.
    return (q.shape, k.shape, v.shape, q.dtype, k.dtype, v.dtype,
            q.get_device(), k.get_device(), v.get_device(), bool(causal),
            scale, window, softcap, deterministic, runtime_shapes,
            _runtime_shapes_mode(runtime_shapes))


# Bound once: True while dynamo traces (torch >= 2.3).
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                     lambda: False)


def attention(q, k, v, *, causal=False, scale=None, window=None, softcap=None,
              return_lse=False, runtime_shapes=None, deterministic=False,
              fp8=False):
    """softmax(scale * q k^T [masked, soft-capped]) v on CUDA tensors.

    q: (B, Hq, Nq, D), k: (B, Hkv, Nk, D), v: (B, Hkv, Nk, Dv); bf16 or f16,
    all on one CUDA device (the kernels run there, on torch's current stream
    of that device), any strides (the sm_90 forward reads views such as
    (B, N, H, D) memory or slices of a packed QKV tensor in place where TMA
    can, D contiguous and other strides multiples of 16 bytes; other layouts
    are copied); Hq a multiple of Hkv (GQA/MQA). scale
    defaults to 1/sqrt(D); window=(left, right) is a sliding window (-1: no
    bound on that side); softcap caps the logits with softcap*tanh(s/softcap).
    Returns o (B, Hq, Nq, Dv), and lse (B, Hq, Nq, float32, natural log) with
    return_lse=True. Differentiable in q, k and v, through o and lse (lse's
    gradient folded into the backward's delta: a kernel set of its own).

    runtime_shapes: True runs the forward and the backward with kernels
    compiled once for every batch and length (sm_90), False with ones built
    for this shape; None (default) decides as $FLASHMLIR_RUNTIME_SHAPES says
    ("1", "0"; read at the first call), else a problem's first shape gets
    its own kernels and later
    shapes the runtime-shapes forward, and the runtime-shapes backward where
    it runs as fast (no causal mask or window, head dims up to 128).

    deterministic: True makes the backward's gradients bitwise equal run to
    run (dQ added in a fixed order of KV blocks; sm_90's WGMMA backward,
    3-36 % slower on the H200, docs/perf). The forward is deterministic
    either way.

    fp8: True computes the forward in FP8 (e4m3; sm_90a, head dims 128 and
    256): Q and K quantized after a Hadamard rotation, V plain, by the
    compiler's quantization kernels (flashmlir.fp8.attention_fp8_quantized).
    Forward only: inputs that require a gradient are refused.
    """
    if fp8 is True:
        if torch.is_grad_enabled() and any(
                t.requires_grad for t in (q, k, v)):
            raise NotImplementedError(
                "flashmlir.attention(fp8=True) has no backward yet: call it "
                "under torch.no_grad() or on tensors without requires_grad")
        from .fp8 import attention_fp8_quantized
        return attention_fp8_quantized(q, k, v, causal=causal, scale=scale,
                                       window=window, softcap=softcap,
                                       return_lse=return_lse)
    if fp8 is not False:
        raise TypeError("flashmlir.attention: fp8 must be True or False, got "
                        "%r" % (fp8,))
    # The thin call path: a call whose tensors' shapes, dtypes and devices
    # and whose arguments repeat an earlier call's that passed the checks
    # (without autograd; never while dynamo traces) reuses that call's
    # config and kernel.
    key = None
    if not (_CUSTOM_OPS and _compiling()):
        key = _call_key(q, k, v, causal, scale, window, softcap,
                        deterministic, runtime_shapes)
        try:
            checked = _checked_calls.get(key)
        except TypeError:  # e.g. a window given as a list
            checked = key = None
        if checked is not None and not (
                torch.is_grad_enabled() and (q.requires_grad or
                                             k.requires_grad or
                                             v.requires_grad)):
            if q.is_contiguous() and k.is_contiguous() and v.is_contiguous():
                return _launch_checked(q, k, v, checked, return_lse)
            _, _, _, o, lse = _attention_forward(q, k, v, checked[0],
                                                 runtime_shapes, checked[1])
            return (o, lse) if return_lse else o
    if not isinstance(deterministic, bool):
        raise TypeError("flashmlir.attention: deterministic must be True or "
                        "False, got %r" % (deterministic,))
    _check_inputs(q, k, v)
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise ValueError("flashmlir.attention: scale must be a positive finite "
                         "number, got %r" % (scale,))
    if runtime_shapes is not None and not isinstance(runtime_shapes, bool):
        raise TypeError("flashmlir.attention: runtime_shapes must be True, "
                        "False or None, got %r" % (runtime_shapes,))
    if _CUSTOM_OPS and _compiling():
        # Traced: the op's fake gives the shapes; the config is built when
        # the compiled graph runs.
        o, lse = _forward_op(q, k, v, bool(causal),
                             None if scale is None else float(scale),
                             None if window is None else list(_window(window)),
                             None if not softcap else float(softcap),
                             runtime_shapes, deterministic)
        return (o, lse) if return_lse else o
    config = _config(q, k, v, causal, scale, window, softcap, deterministic)
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or
                                    v.requires_grad):
        o, lse = FlashAttentionFunction.apply(q, k, v, config, runtime_shapes)
    else:  # no graph to record: skip autograd's bookkeeping
        choice = _forward_kernel(config, q.device, runtime_shapes)
        checked = _checked_call(q, v, config, choice)
        if key is not None:
            _checked_calls[key] = checked
        if q.is_contiguous() and k.is_contiguous() and v.is_contiguous():
            return _launch_checked(q, k, v, checked, return_lse)
        _, _, _, o, lse = _attention_forward(q, k, v, config, runtime_shapes,
                                             choice)
    return (o, lse) if return_lse else o
