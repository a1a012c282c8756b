"""FP8 (e4m3) attention: the forward of Config(dtype="e4m3") kernels
(sm_90a, head dims 128 and 256) on tensors quantized already
(attention_fp8), the compiler's quantization kernels (quantize_fp8:
fa.quantize with the Hadamard rotation), and both in one call on bf16/f16
tensors (attention_fp8_quantized, what flashmlir.attention(..., fp8=True)
runs). No autograd: there is no FP8 backward yet."""

import math

import torch

from . import Config, QuantizeConfig, compile as _compile

_OUT = {torch.bfloat16: "bf16", torch.float16: "f16"}
_kernels = {}  # (config, device ordinal) -> Kernel


def _kernel(config, device):
    """The kernel of `config` loaded on `device` (a CUDA torch.device)."""
    key = (config, device.index)
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = _kernels[key] = _compile(config, device=device.index)
    return kernel


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
    share q's). q's and k's descales must be positive (amax / 448): where
    their product is not, the block's rows are NaN. Returns o (B, Hq, Nq,
    Dv) in out_dtype (torch.bfloat16 or torch.float16), and lse (float32)
    with return_lse=True. P is rounded to e4m3 for P·V, as FlashAttention 3
    does."""
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
    kernel = _kernel(config, q.device)
    q, k, v = (t.contiguous() for t in (q, k, v))
    descales = [t.contiguous() for t in descales]
    o = torch.empty((B, Hq, Nq, Dv), dtype=out_dtype, device=q.device)
    lse = torch.empty((B, Hq, Nq), dtype=torch.float32, device=q.device)
    kernel.forward_fp8(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                       lse.data_ptr(), *(t.data_ptr() for t in descales),
                       stream=torch.cuda.current_stream(q.device).cuda_stream)
    return (o, lse) if return_lse else o


_QUANTIZED = {torch.bfloat16: "bf16", torch.float16: "f16"}
# The rotation's seed of attention_fp8_quantized: any fixed value (Q and K
# must share it; Q Kᵀ does not depend on it).
DEFAULT_ROTATION_SEED = 0x5EED


def quantize_fp8(x, groups=None, rotation_seed=None):
    """x (B, H, N, D) bf16/f16 CUDA tensor -> (e4m3 tensor of x's shape,
    float32 (B, groups) descales) by the compiler's fa.quantize kernels: one
    scale per (batch, block of H / groups heads), amax -> 448; with
    rotation_seed, the rows rotated first by the Hadamard rotation of that
    seed (D a power of two; Q and K with one seed keep Q Kᵀ). groups
    defaults to H."""
    if not isinstance(x, torch.Tensor) or x.dtype not in _QUANTIZED or \
            x.device.type != "cuda" or x.dim() != 4:
        raise TypeError("flashmlir.quantize_fp8: x must be a 4-D (B, H, N, D)"
                        " bfloat16 or float16 CUDA tensor, got %s"
                        % (getattr(x, "dtype", type(x).__name__),))
    B, H, N, D = x.shape
    groups = H if groups is None else groups
    config = QuantizeConfig(dtype=_QUANTIZED[x.dtype], batch=B, heads=H,
                            groups=groups, seq=N, head_dim=D,
                            rotation_seed=rotation_seed)
    kernel = _kernel(config, x.device)
    x = x.contiguous()
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    descale = torch.empty((B, groups), dtype=torch.float32, device=x.device)
    workspace = torch.empty(kernel.quantize_workspace_bytes(),
                            dtype=torch.uint8, device=x.device)
    kernel.quantize(x.data_ptr(), out.data_ptr(), descale.data_ptr(),
                    workspace.data_ptr(),
                    stream=torch.cuda.current_stream(x.device).cuda_stream)
    return out, descale


def attention_fp8_quantized(q, k, v, *, causal=False, scale=None,
                            window=None, softcap=None, return_lse=False,
                            rotation_seed=DEFAULT_ROTATION_SEED):
    """attention(q, k, v) of bf16/f16 tensors computed in FP8: Q and K
    quantized per (batch, KV head) after the Hadamard rotation of
    `rotation_seed` (None: not rotated), V without it, then the FP8 forward
    (attention_fp8), O in q's dtype. FlashAttention 3's recipe: on the
    H200, RMSE 6.4e-3 to 9.0e-3 against float64 on its outlier test
    (docs/perf)."""
    if q.dtype not in _QUANTIZED:
        raise TypeError("flashmlir.attention(fp8=True): q, k and v must be "
                        "bfloat16 or float16, got %s" % (q.dtype,))
    hkv = k.shape[1]
    q8, qd = quantize_fp8(q, hkv, rotation_seed)
    k8, kd = quantize_fp8(k, hkv, rotation_seed)
    v8, vd = quantize_fp8(v, hkv)
    return attention_fp8(q8, k8, v8, qd, kd, vd, causal=causal, scale=scale,
                         window=window, softcap=softcap, out_dtype=q.dtype,
                         return_lse=return_lse)
