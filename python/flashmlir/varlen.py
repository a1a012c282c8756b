"""flashmlir.varlen_attention: sequences packed along N (FlashAttention's
varlen), forward on sm_90's WGMMA kernel; one compiled kernel serves every
batch of lengths."""

import math

import torch

from . import Config, _capi, compile as _compile
from .torch_ops import _TORCH_DTYPES, _stream, _window

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

    Forward only: the varlen backward has no GPU kernel yet, so inputs that
    require grad under autograd are refused (torch.no_grad() or detach())."""
    _check_varlen_inputs(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k)
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or
                                    v.requires_grad):
        raise NotImplementedError(
            "flashmlir.varlen_attention: the varlen backward has no GPU "
            "kernel yet (it runs on the CPU path only); call it under "
            "torch.no_grad() or on tensors that do not require grad")
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise ValueError("flashmlir.varlen_attention: scale must be a "
                         "positive finite number, got %r" % (scale,))
    total_q, heads_q, head_dim = q.shape
    total_k, heads_kv, head_dim_v = v.shape
    window = _window(window)
    key = (q.dtype, heads_q, heads_kv, head_dim, head_dim_v, bool(causal),
           scale, window, softcap)
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = _compile(Config(
            dtype=_TORCH_DTYPES[q.dtype], heads_q=heads_q, heads_kv=heads_kv,
            head_dim=head_dim, head_dim_v=head_dim_v,
            scale=None if scale is None else float(scale),
            causal=bool(causal), window=window,
            softcap=None if not softcap else float(softcap), varlen=True))
        _kernels[key] = kernel
    # (total, H, D) is the kernels' [1, H, total, D] with row stride H*D:
    # read through TMA descriptors, in place where the strides allow.
    views = []
    for t in (q, k, v):
        view = t.unsqueeze(0).transpose(1, 2)
        if view.stride(3) != 1 or any(
                s * t.element_size() % 16 for s in view.stride()[1:3]):
            view = view.contiguous()
        views.append(view)
    qv, kv, vv = views
    o = torch.empty(1, heads_q, total_q, head_dim_v, dtype=q.dtype,
                    device=q.device)
    lse = torch.empty(1, heads_q, total_q, dtype=torch.float32,
                      device=q.device)
    strides = _capi.faForwardStrides()
    for name, t in (("q", qv), ("k", kv), ("v", vv), ("o", o)):
        getattr(strides, name)[:] = t.stride()
    strides.lse[:] = lse.stride()
    offsets_q = cu_seqlens_q.contiguous()
    offsets_k = cu_seqlens_k.contiguous()
    with torch.cuda.device(q.device):
        kernel.forward_varlen(
            qv.data_ptr(), kv.data_ptr(), vv.data_ptr(), o.data_ptr(),
            lse.data_ptr(), offsets_q.data_ptr(), offsets_k.data_ptr(),
            sequences=offsets_q.numel() - 1, max_seqlen_q=max_seqlen_q,
            total_q=total_q, total_kv=total_k, strides=strides,
            stream=_stream(q))
    out = o[0].transpose(0, 1)
    return (out, lse[0]) if return_lse else out
