#!/usr/bin/env python3
"""Checks flashmlir.attention (forward, lse and dq/dk/dv through autograd)
against a float64 PyTorch reference on the GPU machine (torch, no MLIR).

Run it there after carrying .gpu-carry (scripts/gpu/make-python.sh packs the
package with a self-contained libFlashMLIR.so, FA_STATIC_JIT build):

    python3 scripts/gpu/python-check.py [--package .gpu-carry/python/flashmlir-python.tar.xz]

It unpacks the tarball into a temporary directory (or imports an already
importable flashmlir if --package is "" ), runs every case below, prints one
line per case and a summary; exit status 0 iff everything passed.
"""

import argparse
import math
import os
import sys
import tarfile
import tempfile
import time


def reference(q, k, v, causal, scale, window, softcap):
    """float64 attention; masks bottom-right aligned (FlashAttention 2.1+,
    include/fa/Reference/Reference.h isVisible)."""
    import torch
    q, k, v = (t.double() for t in (q, k, v))
    B, Hq, Nq, D = q.shape
    Hkv, Nk = k.shape[1], k.shape[2]
    g = Hq // Hkv
    k = k.repeat_interleave(g, dim=1)
    v = v.repeat_interleave(g, dim=1)
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(Nq, device=q.device).view(-1, 1)
    j = torch.arange(Nk, device=q.device).view(1, -1)
    shift = Nk - Nq
    visible = torch.ones(Nq, Nk, dtype=torch.bool, device=q.device)
    if causal:
        visible &= j <= i + shift
    if window is not None:
        left, right = window
        if left >= 0:
            visible &= j >= i + shift - left
        if right >= 0:
            visible &= j <= i + shift + right
    s = s.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    p = torch.nan_to_num(p, nan=0.0)  # fully masked rows
    return torch.matmul(p, v), lse


CASES = [
    # dtype, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap
    ("bf16", 2, 4, 4, 256, 256, 64, 64, False, None, None),
    ("bf16", 1, 8, 2, 512, 512, 128, 128, True, None, None),
    ("f16", 2, 4, 1, 384, 384, 64, 64, False, None, None),
    ("bf16", 1, 4, 2, 256, 512, 128, 128, True, None, None),
    ("bf16", 1, 4, 4, 512, 512, 64, 64, False, (128, 0), None),
    ("f16", 1, 4, 2, 256, 256, 128, 128, True, None, 30.0),
]


def run_case(flashmlir, torch, case, seed):
    dtype_name, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap = case
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=dev).to(dtype)

    q = rand(B, Hq, Nq, D).requires_grad_()
    k = rand(B, Hkv, Nk, D).requires_grad_()
    v = rand(B, Hkv, Nk, Dv).requires_grad_()
    do = rand(B, Hq, Nq, Dv)
    scale = 1.0 / math.sqrt(D)

    t0 = time.time()
    o, lse = flashmlir.attention(q, k, v, causal=causal, window=window,
                                 softcap=softcap, return_lse=True)
    o.backward(do)
    torch.cuda.synchronize()
    elapsed = time.time() - t0

    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    o_ref, lse_ref = reference(q64, k64, v64, causal, scale, window, softcap)
    o_ref.backward(do.double())

    # Low-precision baseline: the same reference run in the input dtype
    # (upcast to f32 for the math), to scale the tolerance.
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
    results = {}
    pairs = [("o", o, o_ref), ("lse", lse, lse_ref), ("dq", q.grad, q64.grad),
             ("dk", k.grad, k64.grad), ("dv", v.grad, v64.grad)]
    ok = True
    for name, got, want in pairs:
        got = got.double()
        finite = torch.isfinite(want)
        err = (got - want)[finite].abs().max().item() if finite.any() else 0.0
        ref_scale = want[finite].abs().max().item() if finite.any() else 1.0
        rel = err / max(ref_scale, 1e-6)
        l2 = ((got - want)[finite].norm() / want[finite].norm().clamp_min(1e-30)).item() \
            if finite.any() else 0.0
        bad = not math.isfinite(err) or rel > tol * (4 if name != "o" else 1)
        if name == "lse":  # lse is f32; compare absolutely on finite rows
            bad = not math.isfinite(err) or err > 1e-2
        if not torch.isfinite(got[finite]).all():
            bad = True
        results[name] = (err, rel, bad, l2)
        ok = ok and not bad
    return ok, results, elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package",
                    default=".gpu-carry/python/flashmlir-python.tar.xz",
                    help='tarball from make-python.sh; "" to use sys.path')
    args = ap.parse_args()

    if args.package:
        if not os.path.exists(args.package):
            print("python-check: %s not found (run scripts/gpu/make-python.sh"
                  " and carry .gpu-carry)" % args.package)
            return 1
        work = tempfile.mkdtemp(prefix="flashmlir-py.")
        with tarfile.open(args.package) as tar:
            tar.extractall(work)
        sys.path.insert(0, work)
        os.environ.pop("FLASHMLIR_LIBRARY", None)
        os.environ.setdefault("FLASHMLIR_CACHE_DIR", os.path.join(work, "cache"))

    import torch
    import flashmlir
    print("flashmlir:", flashmlir.__file__, "library:", flashmlir.library_path(),
          "compiler:", flashmlir.compiler_version())
    print("torch:", torch.__version__, "device:", torch.cuda.get_device_name(0))

    failures = 0
    for n, case in enumerate(CASES):
        try:
            ok, results, elapsed = run_case(flashmlir, torch, case, seed=n)
        except Exception as e:  # report and go on
            ok, results, elapsed = False, {}, 0.0
            print("ERROR", case, "%s: %s" % (type(e).__name__, e))
        failures += not ok
        detail = " ".join("%s=%.2e/l2=%.2e%s" % (k, r[0], r[3], "!" if r[2] else "")
                          for k, r in results.items())
        print("%s %s %s (%.1fs incl. compile)" % ("PASS" if ok else "FAIL",
                                                 case, detail, elapsed))
    print("summary: %d/%d passed" % (len(CASES) - failures, len(CASES)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
