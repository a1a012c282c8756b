"""FP8 (e4m3) attention on tensors that are quantized already: the forward
of Config(dtype="e4m3") kernels (sm_90a, head dims 128 and 256), no
autograd. Quantizing bf16/f16 tensors (fa.quantize, with the Hadamard
rotation) runs on the CPU pipeline only so far."""

import math

import torch

from . import Config, compile as _compile

_OUT = {torch.bfloat16: "bf16", torch.float16: "f16"}
_kernels = {}


def _check(q, k, v, descales):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float8_e4m3fn:
            raise TypeError("flashmlir.attention_fp8: %s must be a "
                            "torch.float8_e4m3fn tensor, got %s"
                            % (name, getattr(t, "dtype", type(t).__name__)))
        if t.device.type != "cuda" or t.dim() != 4:
            raise ValueError("flashmlir.attention_fp8: %s must be a 4-D "
                             "(B, H, N, D) CUDA tensor" % name)
    B, Hq, Nq, D = q.shape
    _, Hkv, Nk, _ = k.shape
    if k.shape[0] != B or v.shape[0] != B or k.shape[3] != D or \
            v.shape[1] != Hkv or v.shape[2] != Nk:
        raise ValueError("flashmlir.attention_fp8: shapes do not match: q %s,"
                         " k %s, v %s" % (tuple(q.shape), tuple(k.shape),
                                          tuple(v.shape)))
    if Hkv == 0 or Hq % Hkv:
        raise ValueError("flashmlir.attention_fp8: query heads (%d) must be a "
                         "multiple of key/value heads (%d)" % (Hq, Hkv))
    for name, t in zip(("q_descale", "k_descale", "v_descale"), descales):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or \
                tuple(t.shape) != (B, Hkv) or t.device != q.device:
            raise ValueError("flashmlir.attention_fp8: %s must be a float32 "
                             "(B, Hkv) = (%d, %d) tensor on %s"
                             % (name, B, Hkv, q.device))


def attention_fp8(q, k, v, q_descale, k_descale, v_descale, *, causal=False,
                  scale=None, window=None, softcap=None,
                  out_dtype=torch.bfloat16, return_lse=False):
    """softmax(scale * (q k^T) * q_descale * k_descale) (v * v_descale) on
    e4m3 tensors: q (B, Hq, Nq, D), k (B, Hkv, Nk, D), v (B, Hkv, Nk, Dv),
    each descale float32 (B, Hkv), the factor that takes a (batch, KV head)
    block's e4m3 values back to its real values (query heads of a group
    share q's). Returns o (B, Hq, Nq, Dv) in out_dtype (torch.bfloat16 or
    torch.float16), and lse (float32) with return_lse=True. P is rounded to
    e4m3 for P·V, as FlashAttention 3 does."""
    descales = (q_descale, k_descale, v_descale)
    _check(q, k, v, descales)
    if out_dtype not in _OUT:
        raise TypeError("flashmlir.attention_fp8: out_dtype must be "
                        "torch.bfloat16 or torch.float16, got %r"
                        % (out_dtype,))
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise ValueError("flashmlir.attention_fp8: scale must be a positive "
                         "finite number, got %r" % (scale,))
    B, Hq, Nq, D = q.shape
    _, Hkv, Nk, Dv = v.shape
    window = None if window is None else (int(window[0]), int(window[1]))
    config = Config(dtype="e4m3", out_dtype=_OUT[out_dtype], batch=B,
                    heads_q=Hq, heads_kv=Hkv, seq_q=Nq, seq_kv=Nk,
                    head_dim=D, head_dim_v=Dv,
                    scale=None if scale is None else float(scale),
                    causal=bool(causal), window=window,
                    softcap=None if not softcap else float(softcap))
    kernel = _kernels.get(config)
    if kernel is None:
        kernel = _kernels[config] = _compile(config)
    q, k, v = (t.contiguous() for t in (q, k, v))
    descales = [t.contiguous() for t in descales]
    o = torch.empty((B, Hq, Nq, Dv), dtype=out_dtype, device=q.device)
    lse = torch.empty((B, Hq, Nq), dtype=torch.float32, device=q.device)
    with torch.cuda.device(q.device):
        kernel.forward_fp8(q.data_ptr(), k.data_ptr(), v.data_ptr(),
                           o.data_ptr(), lse.data_ptr(),
                           *(t.data_ptr() for t in descales),
                           stream=torch.cuda.current_stream(q.device)
                           .cuda_stream)
    return (o, lse) if return_lse else o
