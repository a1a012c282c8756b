"""The FP8 (e4m3) forward kernels of a directory (make-kernels.sh --fp8,
`fp8bench_*`) timed beside cuDNN's bf16 SDPA on the same shapes, in one
process, with FlashAttention 3's accuracy test where the fp64 reference is
cheap (N <= 2048): Q, K, V ~ N(0, 1) with 0.1 % of entries ~ N(0, 10),
quantized per (batch, KV head) block (amax -> 448), RMSE of O against the
fp64 attention of the unquantized inputs, without and with a random Hadamard
rotation of Q and K before quantization (done in torch for now), beside the
RMSE of bf16 inputs.

    python3 scripts/gpu/fp8-bench.py .gpu-carry/fp8 [--json OUT.json]

torch has no FP8 SDPA on the H200 (cuDNN and flash: "No available
kernel"), so the peer is bf16.
"""
import argparse
import glob
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Driver, bench, flops, kernel_launcher, read_meta  # noqa: E402


def fa3_inputs(*shape):
    x = torch.randn(*shape, device="cuda")
    outliers = torch.rand(*shape, device="cuda") < 0.001
    return torch.where(outliers, 10 * torch.randn(*shape, device="cuda"), x)


def quantize(x, hkv):
    """e4m3 blocks of one (batch, KV head) each, amax -> 448; the descales."""
    b, h = x.shape[:2]
    blocks = x.reshape(b, hkv, -1)
    amax = blocks.abs().amax(-1).clamp_min(1e-12)
    scale = 448.0 / amax
    q8 = (blocks * scale[..., None]).to(torch.float8_e4m3fn).reshape(x.shape)
    return q8, (1.0 / scale).float().contiguous()


def hadamard_rotation(d, seed=1):
    """H diag(s) / sqrt(d): a Sylvester Hadamard matrix with random +-1 column
    signs, orthogonal, so (Q R)(K R)^T = Q K^T (FA3's incoherent processing;
    done in torch here: the compiler's rotation kernel is still to come)."""
    h = torch.ones(1, 1, device="cuda", dtype=torch.float64)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    g = torch.Generator(device="cpu").manual_seed(seed)
    signs = (torch.randint(0, 2, (d,), generator=g) * 2 - 1).to("cuda", torch.float64)
    return (signs[:, None] * h / d ** 0.5).float()


def compiler_quantized_rmse(driver, quantize_dir, meta, x, t, ref, meta_path):
    """RMSE of O with Q, K and V quantized from bf16 by the compiler's
    fa.quantize kernels (Q and K rotated with one seed, V plain), or None
    without those kernels. Leaves t's q, k, v as plain torch quantization."""
    if not quantize_dir:
        return None
    d = int(meta["head_dim"])
    kernels = {}
    for kind in ("rot", "plain"):
        path = os.path.join(quantize_dir, f"quantize_fp8acc_d{d}_{kind}.meta")
        if not os.path.exists(path):
            return None
        qmeta = read_meta(path)
        if [int(qmeta[k]) for k in ("batch", "heads", "seq")] != list(x["k"].shape[:3]):
            return None
        kernels[kind] = (path, qmeta)
    saved = {n: t[n].clone() for n in ("q", "k", "v", "q_descale", "k_descale", "v_descale")}
    for name, kind in (("q", "rot"), ("k", "rot"), ("v", "plain")):
        path, qmeta = kernels[kind]
        io = {"x": x[name].to(torch.bfloat16).contiguous(), "out": t[name].view(torch.uint8),
              "descale": t[name + "_descale"]}
        kernel_launcher(driver, path, qmeta, io)()
    t["o"].fill_(float("nan"))
    kernel_launcher(driver, meta_path, meta, t)()
    torch.cuda.synchronize()
    rmse = float((t["o"].double() - ref).pow(2).mean().sqrt())
    for n, v in saved.items():
        t[n].copy_(v)
    return rmse


def reference(q, k, v, meta):
    hq, hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(hq // hkv, 1)
    v = v.repeat_interleave(hq // hkv, 1)
    s = (q @ k.transpose(-1, -2)) * float(meta["scale"])
    if meta["causal"]:
        nq, nk = q.shape[2], k.shape[2]
        i = torch.arange(nq, device="cuda")[:, None]
        j = torch.arange(nk, device="cuda")[None, :]
        s = s.masked_fill(j > i + (nk - nq), float("-inf"))
    return torch.softmax(s, -1) @ v


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kernel_dir")
    parser.add_argument("--quantize-dir", help="the compiler's quantization kernels "
                        "(make-kernels.sh --quantize: quantize_fp8acc_*): the accuracy test "
                        "again on Q, K, V quantized by them from bf16, Q and K rotated")
    parser.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "fp8-bench.json"))
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.empty(1, device="cuda")
    driver = Driver()
    rows, failed = [], False
    for meta_path in sorted(glob.glob(os.path.join(args.kernel_dir, "fp8bench_*.meta"))):
        meta = read_meta(meta_path)
        b, hq, hkv = int(meta["batch"]), int(meta["heads_q"]), int(meta["heads_kv"])
        nq, nk, d, dv = (int(meta[k]) for k in ("seq_q", "seq_kv", "head_dim", "head_dim_v"))
        out_dtype = torch.bfloat16 if meta["out_dtype"] == "bf16" else torch.float16
        x = {"q": fa3_inputs(b, hq, nq, d), "k": fa3_inputs(b, hkv, nk, d),
             "v": fa3_inputs(b, hkv, nk, dv)}
        t = {}
        for name, heads in (("q", hkv), ("k", hkv), ("v", hkv)):
            t[name], t[name + "_descale"] = quantize(x[name], heads)
        t["o"] = torch.full((b, hq, nq, dv), float("nan"), device="cuda", dtype=out_dtype)
        t["lse"] = torch.full((b, hq, nq), float("nan"), device="cuda")
        run = kernel_launcher(driver, meta_path, meta, t)
        rmse = rmse_rotated = rmse_bf16 = rmse_compiler = None
        if nq <= 2048:
            ref = reference(*(x[n].double() for n in ("q", "k", "v")), meta)
            # The same kernel on Q and K rotated before quantization.
            r = hadamard_rotation(d)
            for name in ("q", "k"):
                rotated, descale = quantize(x[name] @ r, hkv)
                t[name].copy_(rotated)
                t[name + "_descale"].copy_(descale)
            run()
            torch.cuda.synchronize()
            rmse_rotated = float((t["o"].double() - ref).pow(2).mean().sqrt())
            for name in ("q", "k"):
                t[name], t[name + "_descale"] = quantize(x[name], hkv)
            run = kernel_launcher(driver, meta_path, meta, t)
            t["o"].fill_(float("nan"))
            bf16 = reference(*(x[n].bfloat16().float() for n in ("q", "k", "v")), meta)
            rmse_bf16 = float((bf16.bfloat16().double() - ref).pow(2).mean().sqrt())
            rmse_compiler = compiler_quantized_rmse(driver, args.quantize_dir, meta, x, t, ref,
                                                    meta_path)
        run()
        torch.cuda.synchronize()
        finite = bool(torch.isfinite(t["o"]).all())
        if nq <= 2048:
            rmse = float((t["o"].double() - ref).pow(2).mean().sqrt())
            dq = {n: t[n].float().reshape(b, hkv, -1) * t[n + "_descale"][..., None]
                  for n in ("q", "k", "v")}
            deq = reference(*(dq[n].reshape(x[n].shape).double() for n in ("q", "k", "v")), meta)
            rel = float((t["o"].double() - deq).norm() / deq.norm())
        else:
            rel = None
        ms = bench(run)
        ours = flops(meta) / ms / 1e9
        qb, kb, vb = (x[n].to(torch.bfloat16) for n in ("q", "k", "v"))
        kb, vb = kb.repeat_interleave(hq // hkv, 1), vb.repeat_interleave(hq // hkv, 1)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            cudnn_ms = bench(lambda: F.scaled_dot_product_attention(
                qb, kb, vb, is_causal=meta["causal"]))
        cudnn = flops(meta) / cudnn_ms / 1e9
        name = os.path.basename(meta_path)[:-5]
        failed |= not finite
        row = dict(name=name, finite=finite, ms=ms, tflops=ours, cudnn_bf16_tflops=cudnn,
                   rmse_vs_unquantized=rmse, rmse_rotated=rmse_rotated,
                   rmse_bf16_inputs=rmse_bf16, rel_l2_vs_dequantized=rel,
                   rmse_compiler_quantized_rotated=rmse_compiler)
        rows.append(row)
        print(f"{name:34s} {'ok ' if finite else 'NaN'} {ours:7.1f} TFLOP/s  "
              f"cuDNN bf16 {cudnn:6.1f}  x{ours / cudnn:.2f}"
              + (f"  rmse {rmse:.2e} rotated {rmse_rotated:.2e} (bf16 inputs {rmse_bf16:.2e}; "
                 f"vs fp64 of unquantized)  rel {rel:.2e} (vs dequantized)"
                 + (f"  compiler-quantized rotated {rmse_compiler:.2e}" if rmse_compiler else "")
                 if rmse is not None else ""), flush=True)
    json.dump(rows, open(args.json, "w"), indent=1)
    sys.exit(1 if failed or not rows else 0)


if __name__ == "__main__":
    main()
