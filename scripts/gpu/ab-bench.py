"""A/B timing of compiler variants on the GPU machine: the same-named
kernels of several directories (scripts/gpu/make-kernels.sh --bench, one
directory per compiler or flag set) on the same tensors, in one process,
each round timing every variant in turn (the order reversed every other
round, so drift shows as a spread), beside cuDNN once per shape.

    python3 scripts/gpu/ab-bench.py DIR_A DIR_B [DIR...] [--rounds 2]
        [--json OUT.json] [--fa4-site /tmp/fa4/site]

With --fa4-site (FA4 installed there by scripts/gpu/fa4-install.sh), the
forward kernels are also timed against FlashAttention 4 on the same values.

Correctness is scripts/gpu/check.sh's and bench.py's job (fp64 references);
here every output is NaN-poisoned before the first launch and must come out
finite, so a variant that writes nothing cannot look fast.
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


def tensors_for(meta):
    dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
    b, hq, hkv = int(meta["batch"]), int(meta["heads_q"]), int(meta["heads_kv"])
    nq, nk, d, dv = (int(meta[k]) for k in ("seq_q", "seq_kv", "head_dim", "head_dim_v"))
    randn = lambda *s: torch.randn(*s, device="cuda").to(dtype)
    nan = lambda *s, t=dtype: torch.full(s, float("nan"), device="cuda", dtype=t)
    t = {"q": randn(b, hq, nq, d), "k": randn(b, hkv, nk, d), "v": randn(b, hkv, nk, dv)}
    if meta["kind"] == "backward":
        t.update(o=randn(b, hq, nq, dv), do=randn(b, hq, nq, dv),
                 lse=torch.full((b, hq, nq), 8.0, device="cuda"),
                 delta=nan(b, hq, nq, t=torch.float32), dq_acc=nan(b, hq, nq, d, t=torch.float32),
                 dq=nan(b, hq, nq, d), dk=nan(b, hkv, nk, d), dv=nan(b, hkv, nk, dv))
        outputs = ("dq", "dk", "dv")
    else:
        t.update(o=nan(b, hq, nq, dv), lse=nan(b, hq, nq, t=torch.float32))
        outputs = ("o",)
    return t, outputs


def cudnn(meta, t):
    causal = meta["causal"]
    hq, hkv = int(meta["heads_q"]), int(meta["heads_kv"])
    k = t["k"].repeat_interleave(hq // hkv, 1)
    v = t["v"].repeat_interleave(hq // hkv, 1)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        if meta["kind"] != "backward":
            return bench(lambda: F.scaled_dot_product_attention(t["q"], k, v, is_causal=causal))
        q, k, v = (x.detach().clone().requires_grad_() for x in (t["q"], k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return bench(lambda: torch.autograd.grad(out, (q, k, v), t["do"], retain_graph=True))


def fa4(flash_attn_func, meta, t):
    """FA4's forward on (B, N, H, D) copies of the same tensors."""
    if meta["kind"] == "backward":
        return None
    q, k, v = (t[x].transpose(1, 2).contiguous() for x in ("q", "k", "v"))
    causal = meta["causal"]
    return bench(lambda: flash_attn_func(q, k, v, causal=causal))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "ab-bench.json"))
    parser.add_argument("--fa4-site")
    args = parser.parse_args()
    flash_attn_func = None
    if args.fa4_site:
        import site
        site.addsitedir(args.fa4_site)
        from flash_attn.cute.interface import flash_attn_func
    torch.manual_seed(0)
    torch.empty(1, device="cuda")
    driver = Driver()
    labels = [os.path.basename(d.rstrip("/")) for d in args.dirs]
    rows, bad = [], False
    for meta_path in sorted(glob.glob(os.path.join(args.dirs[0], "*.meta"))):
        name = os.path.basename(meta_path)[:-5]
        meta = read_meta(meta_path)
        t, outputs = tensors_for(meta)
        runs, present = [], []
        for d, label in zip(args.dirs, labels):
            path = os.path.join(d, name + ".meta")
            if not os.path.exists(path):
                print(f"note: {name} not in {d}: that variant is left out", flush=True)
                continue
            present.append(label)
            runs.append(kernel_launcher(driver, path, read_meta(path), t))
            for o in outputs:
                t[o].fill_(float("nan"))
            runs[-1]()
            torch.cuda.synchronize()
            if any(not torch.isfinite(t[o]).all().item() for o in outputs):
                print(f"BAD {name} in {d}: outputs not all written", flush=True)
                bad = True
        fl = flops(meta) * (2.5 if meta["kind"] == "backward" else 1)
        times = [[] for _ in runs]
        for r in range(args.rounds):
            order = range(len(runs)) if r % 2 == 0 else reversed(range(len(runs)))
            for i in order:
                times[i].append(bench(runs[i]))
        try:
            peer = fl / (cudnn(meta, t) * 1e-3) / 1e12
        except Exception:
            peer = None
        fa4_ms = fa4(flash_attn_func, meta, t) if flash_attn_func else None
        fa4_tflops = fl / (fa4_ms * 1e-3) / 1e12 if fa4_ms else None
        tflops = [[fl / (ms * 1e-3) / 1e12 for ms in ts] for ts in times]
        rows.append({"kernel": name, "variants": dict(zip(present, tflops)), "cudnn": peer, "fa4": fa4_tflops})
        cells = " ".join(f"{l}={'/'.join(f'{x:.1f}' for x in v)}" for l, v in zip(present, tflops))
        print(f"{name:28s} {cells} cudnn={peer or 0:.1f}"
              + (f" fa4={fa4_tflops:.1f}" if fa4_tflops else ""), flush=True)
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
