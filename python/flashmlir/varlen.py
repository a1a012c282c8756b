"""flashmlir.varlen_attention: sequences packed along N (FlashAttention's
varlen), forward and backward on sm_90's WGMMA kernels; one compiled kernel
(set) serves every batch of lengths."""

import dataclasses
import math
from typing import List, Optional, Tuple

import torch

from . import Config, _capi, compile as _compile
from .torch_ops import (_CUSTOM_OPS, _TORCH_DTYPES, _compiling,
                        _lse_gradient_used, _stream, _window)

_kernels = {}  # (dtype, heads, head dims, masks) -> kernel


def _check_varlen_inputs(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k):
    name = "flashmlir.varlen_attention"
    for label, t in (("q", q), ("k", k), ("v", v),
                     ("cu_seqlens_q", cu_seqlens_q),
                     ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s: %s must be a torch.Tensor, got %s"
                            % (name, label, type(t).__name__))
        if t.device.type != "cuda":
            raise ValueError("%s: %s must be a CUDA tensor, got device %s"
                             % (name, label, t.device))
        if t.device != q.device:
            raise ValueError("%s: %s is on %s, q on %s"
                             % (name, label, t.device, q.device))
    for label, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 3:
            raise ValueError("%s: %s must be 3-D (total, heads, head_dim), "
                             "got shape %s" % (name, label, tuple(t.shape)))
        if t.dtype not in _TORCH_DTYPES or t.dtype != q.dtype:
            raise TypeError("%s: q, k, v must share dtype bfloat16 or "
                            "float16, got %s, %s, %s"
                            % (name, q.dtype, k.dtype, v.dtype))
    if k.shape[:2] != v.shape[:2] or k.shape[2] != q.shape[2]:
        raise ValueError("%s: k %s and v %s must have q's head dim %d and "
                         "the same rows and heads"
                         % (name, tuple(k.shape), tuple(v.shape), q.shape[2]))
    if k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        raise ValueError("%s: query heads (%d) must be a multiple of "
                         "key/value heads (%d)"
                         % (name, q.shape[1], k.shape[1]))
    for label, t in (("cu_seqlens_q", cu_seqlens_q),
                     ("cu_seqlens_k", cu_seqlens_k)):
        if t.dtype != torch.int32 or t.dim() != 1 or t.numel() < 2:
            raise ValueError("%s: %s must be a 1-D int32 tensor of B + 1 "
                             "running offsets (B >= 1), got %s %s"
                             % (name, label, t.dtype, tuple(t.shape)))
    if cu_seqlens_q.numel() != cu_seqlens_k.numel():
        raise ValueError("%s: cu_seqlens_q and cu_seqlens_k hold %d and %d "
                         "offsets; both must hold B + 1"
                         % (name, cu_seqlens_q.numel(), cu_seqlens_k.numel()))
    for label, value, rows in (("max_seqlen_q", max_seqlen_q, q.shape[0]),
                               ("max_seqlen_k", max_seqlen_k, k.shape[0])):
        if isinstance(value, bool) or not isinstance(value, int) or \
                not 1 <= value <= max(rows, 1):
            raise ValueError("%s: %s must be an int in [1, %d] (the longest "
                             "sequence), got %r" % (name, label, rows, value))


def _config(q, v, causal, scale, window, softcap):
    """The varlen Config of a call's dtype, heads, head dims and masks."""
    _, heads_q, head_dim = q.shape
    _, heads_kv, head_dim_v = v.shape
    return Config(
        dtype=_TORCH_DTYPES[q.dtype], heads_q=heads_q, heads_kv=heads_kv,
        head_dim=head_dim, head_dim_v=head_dim_v,
        scale=None if scale is None else float(scale), causal=bool(causal),
        window=window, softcap=None if not softcap else float(softcap),
        varlen=True)


def _kernel(config, key, device, backward=False, grad_lse=False):
    """The compiled kernel of `config` on `device` (one per direction, key
    and device; a backward that takes the gradient of lse is a set of its
    own)."""
    key = key + (device.index, backward, grad_lse)
    kernel = _kernels.get(key)
    if kernel is None:
        if grad_lse:
            config = dataclasses.replace(config, grad_lse=True)
        kernel = _compile(config, backward=backward, device=device.index)
        _kernels[key] = kernel
    return kernel


def _packed(t):
    """(total, H, D) as the kernels' [1, H, total, D]: a view."""
    return t.unsqueeze(0).transpose(1, 2)


class _Sequences:
    """What a call says about its packed sequences."""

    def __init__(self, q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                 max_seqlen_k):
        self.offsets_q = cu_seqlens_q.contiguous()
        self.offsets_k = cu_seqlens_k.contiguous()
        self.count = self.offsets_q.numel() - 1
        self.max_q, self.max_k = max_seqlen_q, max_seqlen_k
        self.total_q, self.total_k = q.shape[0], k.shape[0]


def _forward(kernel, q, k, v, seqs):
    """o and lse ([1, Hq, total_q, Dv] and [1, Hq, total_q], dense) of one
    call."""
    # (total, H, D) is the kernels' [1, H, total, D] with row stride H*D:
    # read through TMA descriptors, in place where the strides allow.
    views = []
    for t in (q, k, v):
        view = _packed(t)
        if view.stride(3) != 1 or any(
                s * t.element_size() % 16 for s in view.stride()[1:3]):
            view = view.contiguous()
        views.append(view)
    qv, kv, vv = views
    heads_q, head_dim_v = q.shape[1], v.shape[2]
    o = torch.empty(1, heads_q, seqs.total_q, head_dim_v, dtype=q.dtype,
                    device=q.device)
    lse = torch.empty(1, heads_q, seqs.total_q, dtype=torch.float32,
                      device=q.device)
    strides = _capi.faForwardStrides()
    for name, t in (("q", qv), ("k", kv), ("v", vv), ("o", o)):
        getattr(strides, name)[:] = t.stride()
    strides.lse[:] = lse.stride()
    kernel.forward_varlen(
        qv.data_ptr(), kv.data_ptr(), vv.data_ptr(), o.data_ptr(),
        lse.data_ptr(), seqs.offsets_q.data_ptr(), seqs.offsets_k.data_ptr(),
        sequences=seqs.count, max_seqlen_q=seqs.max_q, total_q=seqs.total_q,
        total_kv=seqs.total_k, strides=strides, stream=_stream(q))
    return o, lse


def _backward(kernel, q, k, v, o, lse, do, seqs, dlse=None):
    """dq, dk, dv of (total, H, D) inputs with o and lse as the forward
    kernel wrote them ([1, H, total, Dv], [1, Hq, total]): (total, H, D)
    views of the kernels' [1, H, total, D] buffers; rows of no sequence: dq
    0, dk and dv 0 too (zeroed here: the kernels leave them). dlse: the
    gradient of lse, (Hq, total_q), for a kernel set that takes it."""
    if dlse is not None:
        dlse = dlse.to(torch.float32).unsqueeze(0).contiguous()
    # The backward kernels take dense [1, H, total, D] tensors.
    qd, kd, vd, dod = (_packed(t).contiguous() for t in (q, k, v, do))
    dq = torch.empty_like(qd)
    dk = torch.zeros_like(kd)
    dv = torch.zeros_like(vd)
    workspace = torch.empty(kernel.workspace_bytes_varlen(seqs.total_q),
                            dtype=torch.uint8, device=q.device)
    kernel.backward_varlen(
        qd.data_ptr(), kd.data_ptr(), vd.data_ptr(), o.data_ptr(),
        dod.data_ptr(), lse.data_ptr(), dq.data_ptr(), dk.data_ptr(),
        dv.data_ptr(), seqs.offsets_q.data_ptr(), seqs.offsets_k.data_ptr(),
        workspace.data_ptr(), sequences=seqs.count, max_seqlen_q=seqs.max_q,
        max_seqlen_k=seqs.max_k, total_q=seqs.total_q,
        total_kv=seqs.total_k, stream=_stream(q),
        dlse=dlse.data_ptr() if dlse is not None else 0)
    return tuple(t[0].transpose(0, 1) for t in (dq, dk, dv))


class _VarlenFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, seqs, config, key):
        kernel = _kernel(config, key, q.device)
        o, lse = _forward(kernel, q, k, v, seqs)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.seqs, ctx.config, ctx.key = seqs, config, key
        ctx.set_materialize_grads(False)
        return o[0].transpose(0, 1), lse[0]

    @staticmethod
    def backward(ctx, do, dlse):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _gradients(q, k, v, o, lse, do, dlse, ctx.seqs,
                                ctx.config, ctx.key)
        return dq, dk, dv, None, None, None


def _gradients(q, k, v, o, lse, do, dlse, seqs, config, key):
    """dq, dk, dv of <do, o> + <dlse, lse> (None where neither reaches):
    dlse goes into the backward's delta (a kernel set with grad_lse)."""
    if not _lse_gradient_used(dlse):
        dlse = None
    if do is None and dlse is None:
        return None, None, None
    if do is None:
        do = torch.zeros_like(o[0].transpose(0, 1))
    kernel = _kernel(config, key, q.device, backward=True,
                     grad_lse=dlse is not None)
    return _backward(kernel, q, k, v, o, lse, do.to(q.dtype), seqs, dlse)


# torch.compile: the varlen forward and backward as torch custom ops
# (flashmlir::varlen_forward, flashmlir::varlen_backward) whose fakes give
# the outputs' shapes and strides (o and the gradients are (total, H, D)
# views of [1, H, total, D] buffers), so that torch.compile traces through
# varlen_attention() without graph breaks. Eager calls take the direct path
# above; both run the same code.
if _CUSTOM_OPS:
    def _key(q, v, causal, scale, window, softcap):
        return (q.dtype, q.shape[1], v.shape[1], q.shape[2], v.shape[2],
                causal, scale, None if window is None else tuple(window),
                softcap)

    def _head_major(rows, heads, width, like):
        """An empty (rows, heads, width) view of a [heads, rows, width]
        buffer, as the kernels write it."""
        return like.new_empty_strided((rows, heads, width),
                                      (width, rows * width, 1))

    @torch.library.custom_op("flashmlir::varlen_forward", mutates_args=())
    def _varlen_forward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           cu_seqlens_q: torch.Tensor,
                           cu_seqlens_k: torch.Tensor, max_seqlen_q: int,
                           max_seqlen_k: int, causal: bool,
                           scale: Optional[float], window: Optional[List[int]],
                           softcap: Optional[float]
                           ) -> Tuple[torch.Tensor, torch.Tensor]:
        window = None if window is None else tuple(window)
        config = _config(q, v, causal, scale, window, softcap)
        seqs = _Sequences(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                          max_seqlen_k)
        o, lse = _forward(_kernel(config, _key(q, v, causal, scale, window,
                                               softcap), q.device),
                          q, k, v, seqs)
        return o[0].transpose(0, 1), lse[0]

    @_varlen_forward_op.register_fake
    def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
          causal, scale, window, softcap):
        o = _head_major(q.shape[0], q.shape[1], v.shape[2], q)
        return o, q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)

    @torch.library.custom_op("flashmlir::varlen_backward", mutates_args=())
    def _varlen_backward_op(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                            v: torch.Tensor, o: torch.Tensor,
                            lse: torch.Tensor, cu_seqlens_q: torch.Tensor,
                            cu_seqlens_k: torch.Tensor, max_seqlen_q: int,
                            max_seqlen_k: int, causal: bool,
                            scale: Optional[float],
                            window: Optional[List[int]],
                            softcap: Optional[float],
                            dlse: Optional[torch.Tensor] = None
                            ) -> Tuple[torch.Tensor, torch.Tensor,
                                       torch.Tensor]:
        window = None if window is None else tuple(window)
        config = _config(q, v, causal, scale, window, softcap)
        seqs = _Sequences(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                          max_seqlen_k)
        # The kernels' [1, H, total, D] layouts of o and lse.
        o = o.transpose(0, 1).unsqueeze(0).contiguous()
        lse = lse.unsqueeze(0).contiguous()
        return _gradients(q, k, v, o, lse, do, dlse, seqs, config,
                          _key(q, v, causal, scale, window, softcap))

    @_varlen_backward_op.register_fake
    def _(do, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
          max_seqlen_k, causal, scale, window, softcap, dlse=None):
        return (_head_major(q.shape[0], q.shape[1], q.shape[2], q),
                _head_major(k.shape[0], k.shape[1], k.shape[2], k),
                _head_major(v.shape[0], v.shape[1], v.shape[2], v))

    def _varlen_setup_context(ctx, inputs, output):
        q, k, v, cu_q, cu_k, max_q, max_k = inputs[:7]
        ctx.save_for_backward(q, k, v, cu_q, cu_k, *output)
        ctx.options = (max_q, max_k) + tuple(inputs[7:])
        ctx.set_materialize_grads(False)

    def _backward_of_varlen_forward_op(ctx, do, dlse):
        if do is None and dlse is None:
            return (None,) * 11
        q, k, v, cu_q, cu_k, o, lse = ctx.saved_tensors
        if do is None:
            do = torch.zeros_like(o)
        dq, dk, dv = _varlen_backward_op(do, q, k, v, o, lse, cu_q, cu_k,
                                         *ctx.options, dlse=dlse)
        return (dq, dk, dv) + (None,) * 8

    _varlen_forward_op.register_autograd(
        _backward_of_varlen_forward_op, setup_context=_varlen_setup_context)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k, causal=False, scale=None, window=None,
                     softcap=None, return_lse=False):
    """Attention over B sequences packed along the rows: q (total_q, Hq, D),
    k (total_k, Hkv, D), v (total_k, Hkv, Dv), CUDA bf16 or f16 (any row and
    head strides that are multiples of 16 bytes, D contiguous: read in
    place); sequence b owns query rows [cu_seqlens_q[b], cu_seqlens_q[b+1])
    and key rows [cu_seqlens_k[b], cu_seqlens_k[b+1]) (int32 CUDA tensors of
    B + 1 non-decreasing offsets, trusted as FlashAttention's are: they are
    not read on the host) and attends to its own keys only, its causal /
    window mask bottom-right aligned on its own lengths. max_seqlen_q/k:
    the longest sequences (ints).

    Returns o (total_q, Hq, Dv), a view of an (Hq, total_q, Dv) buffer, and
    with return_lse the natural-log lse (Hq, total_q), float32. Rows outside
    every sequence are left as they are (uninitialised).

    Differentiable (sm_90's WGMMA backward, head dims in multiples of 16 up
    to 256; one compiled kernel set for every batch of lengths): dq, dk and
    dv of rows outside every sequence are 0, through o and lse (lse's
    gradient folded into the backward's delta)."""
    _check_varlen_inputs(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k)
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise ValueError("flashmlir.varlen_attention: scale must be a "
                         "positive finite number, got %r" % (scale,))
    window = _window(window)
    if _CUSTOM_OPS and _compiling():
        # Traced: the op's fake gives the shapes; the kernels are chosen
        # when the compiled graph runs.
        out, lse = _varlen_forward_op(
            q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q),
            int(max_seqlen_k), bool(causal),
            None if scale is None else float(scale),
            None if window is None else list(window),
            None if not softcap else float(softcap))
        return (out, lse) if return_lse else out
    key = (q.dtype, q.shape[1], k.shape[1], q.shape[2], v.shape[2],
           bool(causal), scale, window, softcap)
    config = _config(q, v, causal, scale, window, softcap)
    seqs = _Sequences(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                      max_seqlen_k)
    out, lse = _VarlenFunction.apply(q, k, v, seqs, config, key)
    return (out, lse) if return_lse else out
