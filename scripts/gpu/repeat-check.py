"""Runs backward kernels several times on the same inputs and reports how
their gradients move: a race shows as run-to-run differences far above the
rounding of dQ's unordered sums, and as an error against float64 that
changes between runs.

    python3 scripts/gpu/repeat-check.py DIR [DIR...] [--runs 5]

For every backward .meta/.ptx in each DIR (make-kernels.sh --bench or
--bwd-wgmma): fixed random inputs, O and LSE from a float32 forward per head,
NaN-poisoned outputs and workspace before every run; per run the relative
L2 error of dQ, dK, dV against float64 autograd on two heads (the first and
the last), and the largest relative L2 difference of any gradient from the
first run over the whole tensors. Exit status 1 if any run is not fully
written, exceeds the bf16 bound (2e-2) or moves by more than 1e-3.
"""
import argparse
import glob
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Driver, kernel_launcher, read_meta, reference  # noqa: E402


def rel(a, b):
    a, b = a.double(), b.double()
    if not bool(torch.isfinite(a).all()):
        return float("inf")
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def forward_fp32(q, k, v, meta):
    """O (input dtype) and LSE (f32), one head at a time."""
    b, hq = q.shape[:2]
    group = hq // k.shape[1]
    o = torch.empty(q.shape[:3] + (v.shape[3],), dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    for i in range(b):
        for h in range(hq):
            oh, lh = reference(q[i:i + 1, h:h + 1].float(), k[i:i + 1, h // group:h // group + 1].float(),
                               v[i:i + 1, h // group:h // group + 1].float(), meta)
            o[i, h], lse[i, h] = oh[0, 0].to(q.dtype), lh[0, 0]
    return o, lse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    driver = Driver()
    bad = False
    for d in args.dirs:
        for meta_path in sorted(glob.glob(os.path.join(d, "*.meta"))):
            meta = read_meta(meta_path)
            if meta["kind"] != "backward":
                continue
            dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
            b, hq, hkv = (int(meta[x]) for x in ("batch", "heads_q", "heads_kv"))
            nq, nk, dh, dv = (int(meta[x]) for x in ("seq_q", "seq_kv", "head_dim", "head_dim_v"))
            g = torch.Generator(device="cuda").manual_seed(1234)
            randn = lambda *s: torch.randn(*s, device="cuda", generator=g).to(dtype)
            q, k, v, do = randn(b, hq, nq, dh), randn(b, hkv, nk, dh), randn(b, hkv, nk, dv), randn(b, hq, nq, dv)
            o, lse = forward_fp32(q, k, v, meta)
            refs = []
            for i, h in ((0, 0), (b - 1, hq - 1)):
                kv = h // (hq // hkv)
                q64, k64, v64 = (t.double().requires_grad_() for t in
                                 (q[i:i + 1, h:h + 1], k[i:i + 1, kv:kv + 1], v[i:i + 1, kv:kv + 1]))
                o64, _ = reference(q64, k64, v64, meta)
                refs.append((i, h, kv, torch.autograd.grad(o64, (q64, k64, v64), do[i:i + 1, h:h + 1].double())))
            nan = float("nan")
            t = {"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse,
                 "delta": torch.full((b, hq, nq), nan, device="cuda"),
                 "dq_acc": torch.full((b, hq, nq, dh), nan, device="cuda"),
                 "dq": torch.full_like(q, nan), "dk": torch.full_like(k, nan), "dv": torch.full_like(v, nan)}
            run = kernel_launcher(driver, meta_path, meta, t)
            first, errs, moves = None, [], []
            for _ in range(args.runs):
                for name in ("delta", "dq_acc", "dq", "dk", "dv"):
                    t[name].fill_(nan)
                run()
                torch.cuda.synchronize()
                grads = [t["dq"].clone(), t["dk"].clone(), t["dv"].clone()]
                e = 0.0
                for i, h, kv, (gq, gk, gv) in refs:
                    # dK/dV of a GQA group hold every query head's share:
                    # compare dQ per head, dK/dV only without GQA.
                    e = max(e, rel(grads[0][i, h], gq[0, 0]))
                    if hq == hkv:
                        e = max(e, rel(grads[1][i, kv], gk[0, 0]), rel(grads[2][i, kv], gv[0, 0]))
                errs.append(e)
                if first is None:
                    first = grads
                moves.append(max(rel(a, f) for a, f in zip(grads, first)))
            ok = all(x < 2e-2 for x in errs) and all(m < 1e-3 for m in moves)
            bad |= not ok
            print("%s %s/%s err=%s moved=%s" % ("PASS" if ok else "FAIL", os.path.basename(d.rstrip("/")),
                  os.path.basename(meta_path)[:-5], " ".join("%.1e" % x for x in errs),
                  " ".join("%.0e" % x for x in moves)), flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
