#!/usr/bin/env python3
"""Checks flashmlir.attention (forward, lse and dq/dk/dv through autograd)
against a float64 PyTorch reference on the GPU machine (torch, no MLIR).

Run it there after carrying .gpu-carry (scripts/gpu/make-python.sh packs the
package with a self-contained libFlashMLIR.so, FA_STATIC_JIT build):

    python3 scripts/gpu/python-check.py [--package .gpu-carry/python/flashmlir-python.tar.xz]

It unpacks the tarball into a temporary directory (or imports an already
importable flashmlir if --package is "" ), runs every case below, prints one
line per case and a summary; exit status 0 iff everything passed. Then a
finite-difference check of the gradients on tiny f16 cases (FD_CASES).
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
    # The GPU slice's matrix (scripts/gpu/make-kernels.sh), through autograd:
    ("bf16", 1, 2, 2, 1, 1, 64, 64, False, None, None),
    ("bf16", 2, 8, 2, 77, 77, 64, 64, True, None, None),
    ("f16", 1, 4, 4, 77, 77, 64, 64, False, None, None),
    ("f16", 1, 8, 2, 4096, 4096, 64, 64, True, None, None),
    ("bf16", 1, 4, 4, 1000, 1000, 128, 128, False, None, None),
    ("f16", 1, 4, 4, 1000, 1000, 128, 128, True, None, None),
    ("bf16", 1, 4, 4, 77, 1000, 128, 128, True, None, None),
    ("bf16", 1, 4, 4, 1000, 77, 128, 128, True, None, None),
    ("f16", 1, 4, 4, 1000, 1000, 128, 128, False, (64, 64), None),
    ("bf16", 1, 4, 4, 1000, 1000, 128, 128, True, None, 30.0),
    ("bf16", 1, 4, 4, 1000, 1000, 128, 64, False, None, None),
    ("bf16", 1, 8, 2, 4096, 4096, 128, 128, True, None, None),
    ("bf16", 1, 2, 2, 1000, 1000, 256, 256, False, None, None),
    ("f16", 1, 2, 2, 4096, 4096, 256, 256, True, None, None),
    # and a few more: MQA, one-sided window, softcap with GQA.
    ("f16", 2, 4, 1, 384, 384, 64, 64, False, None, None),
    ("bf16", 1, 4, 4, 512, 512, 64, 64, False, (128, 0), None),
    ("f16", 1, 4, 2, 256, 256, 128, 128, True, None, 30.0),
    # Head dims whose rows are not 128-byte multiples (64-byte swizzle
    # atoms), and 192 with Dv 128 (two warpgroups split dQ's columns
    # inside an atom).
    ("bf16", 2, 8, 2, 1000, 1000, 96, 96, True, None, None),
    ("f16", 1, 4, 4, 500, 777, 96, 96, False, (64, 64), None),
    ("bf16", 1, 4, 2, 1000, 1000, 192, 128, True, None, None),
    ("f16", 1, 2, 2, 300, 300, 192, 192, False, None, 30.0),
    # 32-byte atoms: head dims in odd multiples of 16 (dQ's 80 columns
    # split at 40, inside an atom).
    ("bf16", 2, 8, 2, 1000, 1000, 80, 80, True, None, None),
    ("f16", 1, 4, 4, 500, 777, 80, 80, False, (64, 64), None),
    ("bf16", 1, 2, 2, 300, 300, 144, 144, True, None, 30.0),
]
# Runtime shapes: one forward kernel per problem, run at every
# (B, Nq, Nk) listed (runtime_shapes=True), gradients through autograd.
RUNTIME_SHAPE_CASES = [
    # dtype, Hq, Hkv, D, Dv, causal, window, softcap, [(B, Nq, Nk), ...]
    ("bf16", 8, 2, 128, 128, True, None, None,
     [(1, 1, 1), (1, 77, 1000), (2, 1000, 77), (3, 257, 257)]),
    ("f16", 4, 4, 64, 64, False, (64, 64), None,
     [(2, 300, 300), (1, 4096, 4096), (1, 129, 130)]),
    ("bf16", 4, 4, 256, 256, True, None, 30.0, [(1, 500, 500), (2, 64, 700)]),
    ("bf16", 4, 2, 96, 96, True, None, None, [(1, 77, 1000), (2, 500, 500)]),
    ("bf16", 4, 2, 80, 80, True, None, None, [(1, 77, 1000), (2, 500, 500)]),
]


# Strided views read in place by the sm_90 forward (its TMA descriptors take
# the strides): case, runtime_shapes, layout.
LAYOUT_CASES = [
    (("bf16", 2, 8, 2, 777, 777, 96, 96, True, None, None), None, "bnhd"),
    (("bf16", 2, 8, 2, 777, 777, 80, 80, True, None, None), None, "bnhd"),
    (("bf16", 2, 8, 2, 1000, 1000, 128, 128, True, None, None), None, "bnhd"),
    (("f16", 1, 4, 4, 333, 333, 64, 64, False, None, None), None, "packed"),
    (("bf16", 2, 16, 16, 512, 512, 128, 128, True, None, None), True,
     "packed"),
]


# Gradients through lse as well as o (dLSE folded into the backward's
# delta: a kernel set compiled with grad_lse), softcap's chain rule too.
LSE_GRAD_CASES = [
    ("bf16", 2, 8, 2, 300, 500, 128, 128, True, None, None),
    ("f16", 1, 4, 4, 256, 256, 64, 64, False, (32, 32), None),
    ("bf16", 1, 4, 2, 1000, 77, 256, 256, True, None, 30.0),
]

# attention(..., deterministic=True): gradients against float64 and bitwise
# equal over DETERMINISTIC_RUNS runs on the same inputs (dQ added in a fixed
# order of KV blocks: the reducer warp's bulk sums in turn up to head dim
# 128, atomic sums in turn at 256).
DETERMINISTIC_CASES = [
    ("bf16", 2, 8, 2, 1000, 1000, 64, 64, True, None, None),
    ("bf16", 1, 4, 4, 777, 1500, 128, 128, False, None, None),
    ("f16", 1, 2, 2, 600, 600, 256, 256, True, None, None),
]
DETERMINISTIC_RUNS = 3


def runtime_shape_cases():
    for dtype, Hq, Hkv, D, Dv, causal, window, softcap, shapes in \
            RUNTIME_SHAPE_CASES:
        for B, Nq, Nk in shapes:
            yield (dtype, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap)


# ||out - ref|| / ||ref|| bounds (METHOD: bf16 operands land in 1e-3..1e-2);
# ||ref|| is floored at an RMS of 1e-2 so that an exactly-zero gradient (N = 1:
# P = 1, dS = 0) is judged against the inputs' O(1) scale, not against 0.
TOLERANCE = {"bf16": 1e-2, "f16": 3e-3}
LSE_TOLERANCE = 1e-3  # absolute, on rows with a visible key (f32 math)


class PoisonedTorch:
    """torch, but empty()/empty_like() come back filled with NaN (0xFF bytes
    for integers): installed as flashmlir.torch_ops.torch so that every output
    our kernels leave unwritten shows up as NaN, whatever the caching
    allocator hands out."""

    def __init__(self, torch):
        self._torch = torch

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def _poison(self, t):
        return t.fill_(float("nan") if t.is_floating_point() else 0xFF)

    def empty(self, *args, **kwargs):
        return self._poison(self._torch.empty(*args, **kwargs))

    def empty_like(self, *args, **kwargs):
        return self._poison(self._torch.empty_like(*args, **kwargs))


def rel_l2(got, want):
    diff = (got - want).norm().item()
    floor = 1e-2 * math.sqrt(want.numel())
    return diff / max(want.norm().item(), floor) if want.numel() else 0.0


def run_case(flashmlir, torch, case, seed, runtime_shapes=None,
             layout="bhnd", lse_grad=False, deterministic=False, grads=None):
    """layout: "bhnd" (contiguous), "bnhd" ((B, N, H, D) memory viewed as
    (B, H, N, D)) or "packed" (slices of one (B, N, 3, H, D) tensor, as a
    fused QKV projection gives; Hq = Hkv, D = Dv). `grads`, a list, gets
    the gradients (dq, dk, dv)."""
    dtype_name, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap = case
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=dev).to(dtype)

    if layout == "packed":
        qkv = rand(B, Nq, 3, Hq, D).requires_grad_()
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    elif layout == "bnhd":
        bases = (rand(B, Nq, Hq, D).requires_grad_(),
                 rand(B, Nk, Hkv, D).requires_grad_(),
                 rand(B, Nk, Hkv, Dv).requires_grad_())
        q, k, v = (t.transpose(1, 2) for t in bases)
    else:
        q = rand(B, Hq, Nq, D).requires_grad_()
        k = rand(B, Hkv, Nk, D).requires_grad_()
        v = rand(B, Hkv, Nk, Dv).requires_grad_()
    for t in (q, k, v):  # the views' own gradients are compared
        t.retain_grad()
    do = rand(B, Hq, Nq, Dv)
    scale = 1.0 / math.sqrt(D)

    t0 = time.time()
    o, lse = flashmlir.attention(q, k, v, causal=causal, window=window,
                                 softcap=softcap, return_lse=True,
                                 runtime_shapes=runtime_shapes,
                                 deterministic=deterministic)
    # With lse_grad the loss also weighs lse (its finite rows) by dlse.
    dlse = torch.randn(B, Hq, Nq, generator=gen, device=dev)

    def loss_of(o, lse, do, dlse):
        loss = (o * do).sum()
        if lse_grad:
            loss = loss + (torch.where(torch.isfinite(lse), lse,
                                       torch.zeros_like(lse)) * dlse).sum()
        return loss
    loss_of(o.float(), lse, do.float(), dlse).backward()
    torch.cuda.synchronize()
    elapsed = time.time() - t0
    if grads is not None:
        grads.append(tuple(t.grad.detach().clone() for t in (q, k, v)))

    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    o_ref, lse_ref = reference(q64, k64, v64, causal, scale, window, softcap)
    loss_of(o_ref, lse_ref, do.double(), dlse.double()).backward()

    tol = TOLERANCE[dtype_name]
    results = {}
    pairs = [("o", o, o_ref), ("lse", lse, lse_ref), ("dq", q.grad, q64.grad),
             ("dk", k.grad, k64.grad), ("dv", v.grad, v64.grad)]
    ok = True
    for name, got, want in pairs:
        got = got.double()
        # lse is -inf on rows without a visible key, in both.
        finite = torch.isfinite(want)
        written = bool(torch.isfinite(got[finite]).all()) and \
            bool((got[~finite] == want[~finite]).all())
        if name == "lse":
            err = (got - want)[finite].abs().max().item() \
                if finite.any() else 0.0
            bad = not written or not err <= LSE_TOLERANCE
        else:
            err = rel_l2(got, want) if written else float("inf")
            bad = not err <= tol
        results[name] = (err, bad)
        ok = ok and not bad
    return ok, results, elapsed


# Finite differences: tiny f16 problems whose inputs lie on a 2^-6 grid in
# [-2, 2] and whose perturbations are +-2^-4 per element (+-2^-3 for q, whose
# effect the softmax scale shrinks), so x +- h is exact in f16 and the
# difference quotient sees exactly the step it divides by.
FD_CASES = [
    # B, Hq, Hkv, N, D, causal, softcap
    (1, 2, 1, 33, 64, True, None),
    (1, 2, 2, 24, 64, False, 20.0),
]
FD_DIRECTIONS = 6
FD_STEPS = {"q": 1 / 8, "k": 1 / 16, "v": 1 / 16}
# ||fd - analytic|| / ||analytic|| over the directions of one tensor. The f16
# rounding of o alone puts ~1e-2 of noise into L's differences.
FD_TOLERANCE = 3e-2


def fd_case(flashmlir, torch, case, seed):
    """For L = <o, w>: (L(x + h) - L(x - h)) / 2 against <dL/dx, h> from our
    backward, for random sign directions h of q, k and v; both sides use our
    kernels only (the forward is checked against fp64 above). Returns
    (passed, {tensor: relative error})."""
    B, Hq, Hkv, N, D, causal, softcap = case
    gen = torch.Generator(device="cuda").manual_seed(1000 + seed)

    def grid(*shape):
        x = torch.randint(-128, 129, shape, generator=gen, device="cuda")
        return (x.double() / 64).half()

    def sign_step(t, step):
        bits = torch.randint(0, 2, t.shape, generator=gen, device="cuda")
        return ((bits * 2 - 1).double() * step).half()

    x = {"q": grid(B, Hq, N, D), "k": grid(B, Hkv, N, D) / 2,
         "v": grid(B, Hkv, N, D)}
    # The weights are dO of the backward: f16, used exactly in L too.
    w = torch.randn(B, Hq, N, D, generator=gen, device="cuda").half()

    def loss(args):
        o = flashmlir.attention(args["q"], args["k"], args["v"],
                                causal=causal, softcap=softcap)
        return (o.double() * w.double()).sum().item()

    leaves = {n: t.clone().requires_grad_() for n, t in x.items()}
    o = flashmlir.attention(leaves["q"], leaves["k"], leaves["v"],
                            causal=causal, softcap=softcap)
    o.backward(w)
    errors = {}
    for name in ("q", "k", "v"):
        grad = leaves[name].grad.double()
        diff2 = norm2 = 0.0
        for _ in range(FD_DIRECTIONS):
            h = sign_step(x[name], FD_STEPS[name])
            plus, minus = dict(x), dict(x)
            plus[name], minus[name] = x[name] + h, x[name] - h
            assert torch.equal(plus[name].double() - minus[name].double(),
                               2 * h.double()), "step not exact in f16"
            fd = (loss(plus) - loss(minus)) / 2
            an = (grad * h.double()).sum().item()
            diff2 += (fd - an) ** 2
            norm2 += an ** 2
        errors[name] = math.sqrt(diff2 / max(norm2, 1e-30))
    return max(errors.values()) <= FD_TOLERANCE, errors


def case_configs():
    """The Config each case's flashmlir.attention call builds (torch_ops'
    _config: default scale, softcap None when off)."""
    from flashmlir import Config
    for dtype, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap in CASES:
        yield Config(dtype=dtype, batch=B, heads_q=Hq, heads_kv=Hkv, seq_q=Nq,
                     seq_kv=Nk, head_dim=D, head_dim_v=Dv, causal=causal,
                     window=window, softcap=softcap)
    for B, Hq, Hkv, N, D, causal, softcap in FD_CASES:
        yield Config(dtype="f16", batch=B, heads_q=Hq, heads_kv=Hkv, seq_q=N,
                     seq_kv=N, head_dim=D, head_dim_v=D, causal=causal,
                     softcap=softcap)


def precompile_cases():
    import dataclasses
    import flashmlir
    jobs = [(config, backward) for config in case_configs()
            for backward in (False, True)]
    # The runtime-shapes cases: one forward each, a backward per shape.
    # The layout cases as they run.
    for case, runtime_shapes in [(c, True) for c in runtime_shape_cases()] + \
            [(c, rs) for c, rs, _ in LAYOUT_CASES] + \
            [(c, None) for c in LSE_GRAD_CASES + DETERMINISTIC_CASES]:
        dtype, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap = case
        config = flashmlir.Config(
            dtype=dtype, batch=B, heads_q=Hq, heads_kv=Hkv, seq_q=Nq,
            seq_kv=Nk, head_dim=D, head_dim_v=Dv, causal=causal,
            window=window, softcap=softcap)
        jobs += [(dataclasses.replace(config,
                                      runtime_shapes=bool(runtime_shapes)),
                  False),
                 (config, True)]
    for case in DETERMINISTIC_CASES:
        dtype, B, Hq, Hkv, Nq, Nk, D, Dv, causal, window, softcap = case
        jobs.append((flashmlir.Config(
            dtype=dtype, batch=B, heads_q=Hq, heads_kv=Hkv, seq_q=Nq,
            seq_kv=Nk, head_dim=D, head_dim_v=Dv, causal=causal,
            window=window, softcap=softcap, deterministic=True), True))
    for config, backward in jobs:
        hit = flashmlir.precompile(config, backward=backward)
        print("%s %s %s" % ("hit  " if hit else "built",
                            "bwd" if backward else "fwd", config))
    return 0


def use_package(tarball):
    """Unpacks make-python.sh's tarball and imports flashmlir from it (its
    kernel cache beside it); False if there is none."""
    if not os.path.exists(tarball):
        print("%s not found (run scripts/gpu/make-python.sh and carry "
              ".gpu-carry)" % tarball)
        return False
    work = tempfile.mkdtemp(prefix="flashmlir-py.")
    with tarfile.open(tarball) as tar:
        tar.extractall(work)
    sys.path.insert(0, work)
    os.environ.pop("FLASHMLIR_LIBRARY", None)
    os.environ.setdefault("FLASHMLIR_CACHE_DIR", os.path.join(work, "cache"))
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package",
                    default=".gpu-carry/python/flashmlir-python.tar.xz",
                    help='tarball from make-python.sh; "" to use sys.path')
    ap.add_argument("--precompile", action="store_true",
                    help="only compile every case's kernels into the cache "
                         "($FLASHMLIR_CACHE_DIR), without a GPU")
    ap.add_argument("--only", metavar="TEXT",
                    help="run only the cases whose tuple's text contains "
                         "TEXT (e.g. '256, 256,' for head dim 256), none of "
                         "the checks that follow them (auto choices, "
                         "deterministic runs, finite differences)")
    args = ap.parse_args()
    if args.precompile:
        return precompile_cases()

    if args.package and not use_package(args.package):
        return 1

    import torch
    import flashmlir
    import flashmlir.torch_ops
    flashmlir.torch_ops.torch = PoisonedTorch(torch)
    print("flashmlir:", flashmlir.__file__, "library:", flashmlir.library_path(),
          "compiler:", flashmlir.compiler_version())
    print("torch:", torch.__version__, "device:", torch.cuda.get_device_name(0))

    failures = 0
    os.environ.pop("FLASHMLIR_RUNTIME_SHAPES", None)
    cases = [(case, None, "bhnd") for case in CASES] + \
        [(case, True, "bhnd") for case in runtime_shape_cases()] + \
        [(case, rs, layout) for case, rs, layout in LAYOUT_CASES] + \
        [(case, None, "lse") for case in LSE_GRAD_CASES]
    if args.only:
        cases = [c for c in cases if args.only in repr(c[0])]
    # Which inputs the forward read in place (no copy).
    in_place = []
    original_in_place = flashmlir.torch_ops._in_place

    def recording_in_place(t, mapped):
        out = original_in_place(t, mapped)
        in_place.append(out is t)
        return out
    flashmlir.torch_ops._in_place = recording_in_place
    for n, (case, runtime_shapes, layout) in enumerate(cases):
        in_place.clear()
        try:
            ok, results, elapsed = run_case(flashmlir, torch, case, seed=n,
                                            runtime_shapes=runtime_shapes,
                                            layout=("bhnd" if layout == "lse"
                                                    else layout),
                                            lse_grad=layout == "lse")
            if layout not in ("bhnd", "lse"):
                results["in_place"] = (float(sum(in_place)), not all(in_place))
                ok = ok and all(in_place)
        except Exception as e:  # report and go on
            ok, results, elapsed = False, {}, 0.0
            print("ERROR", case, "%s: %s" % (type(e).__name__, e))
        failures += not ok
        detail = " ".join("%s=%.1e%s" % (k, r[0], "!" if r[1] else "")
                          for k, r in results.items())
        print("%s %s%s%s %s (%.1fs incl. compile)" % (
            "PASS" if ok else "FAIL", case,
            " runtime shapes" if runtime_shapes else "",
            "" if layout == "bhnd" else " " + layout, detail, elapsed))
    if args.only:
        print("summary: %d/%d passed (--only %r)" % (
            len(cases) - failures, len(cases), args.only))
        return 1 if failures or not cases else 0
    # By default a problem's second shape runs on its runtime-shapes kernel.
    served = {c: s for (c, _device), s in flashmlir.torch_ops._served.items()
              if c.seq_q == 1 and any(
                  shape is not None for _, shape in s.values())}
    auto_ok = any(c.heads_q == 4 and c.head_dim == 128 and c.causal and
                  not c.window and not c.softcap for c in served)
    print("%s the default (auto) ran a repeated problem's second shape on its "
          "runtime-shapes kernel" % ("PASS" if auto_ok else "FAIL"))
    failures += not auto_ok
    # And its backward, where that runs as fast (no mask band, head dims up
    # to 128): the f16 hd64 problem's second shape (333, packed QKV).
    backward_auto = [c for (c, mode, _device), kernel in
                     flashmlir.torch_ops._backward_choices.items()
                     if mode == "auto" and kernel is not None]
    bwd_ok = any(c.head_dim == 64 and not c.causal and c.seq_q == 333
                 for c in backward_auto) and \
        not any(c.causal or c.window for c in backward_auto)
    print("%s the default (auto) ran a repeated unmasked problem's second "
          "shape's backward on its runtime-shapes set, and no masked one's: "
          "%s" % ("PASS" if bwd_ok else "FAIL",
                  sorted((c.head_dim, c.seq_q, c.seq_kv) for c in
                         backward_auto)))
    failures += not bwd_ok
    for n, case in enumerate(DETERMINISTIC_CASES):
        grads, errors, ok = [], {}, True
        try:
            for _ in range(DETERMINISTIC_RUNS):
                passed, results, _ = run_case(flashmlir, torch, case,
                                              seed=500 + n,
                                              deterministic=True,
                                              grads=grads)
                ok = ok and passed
                errors = results
            equal = all(torch.equal(a, b) for run in grads[1:]
                        for a, b in zip(grads[0], run))
        except Exception as e:  # report and go on
            ok, equal = False, False
            print("ERROR deterministic", case, "%s: %s" % (type(e).__name__, e))
        failures += not (ok and equal)
        print("%s deterministic %s: %s; gradients %s over %d runs" % (
            "PASS" if ok and equal else "FAIL", case,
            " ".join("%s=%.1e%s" % (k, r[0], "!" if r[1] else "")
                     for k, r in errors.items()),
            "bitwise equal" if equal else "DIFFER", DETERMINISTIC_RUNS))
    for n, case in enumerate(FD_CASES):
        try:
            ok, errors = fd_case(flashmlir, torch, case, seed=n)
        except Exception as e:  # report and go on
            ok, errors = False, {}
            print("ERROR fd", case, "%s: %s" % (type(e).__name__, e))
        failures += not ok
        print("%s finite differences %s: %s over %d directions each "
              "(bound %.0e)" % ("PASS" if ok else "FAIL", case,
                                " ".join("d%s=%.1e" % kv
                                         for kv in errors.items()),
                                FD_DIRECTIONS, FD_TOLERANCE))
    total = len(cases) + len(DETERMINISTIC_CASES) + len(FD_CASES) + 1
    print("summary: %d/%d passed" % (total - failures, total))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
