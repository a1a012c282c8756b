#!/usr/bin/env python3
"""flashmlir.varlen_attention on the GPU against float64, per sequence,
forward and gradients.

Batches of packed sequences (lengths 0, 1, 17, 1000, 4097, Nq != Nk,
key-less sequences, GQA, masks, softcap, a packed-QKV view) with a few
padding rows after the last sequence; outputs poisoned with NaN (empty()
patched as in python-check.py): every row of a sequence must be written,
and the padding rows of o and lse must stay NaN. Through autograd (the loss
weighs the sequences' rows of o by dO, and in the lse-gradient cases their
finite lse by dLSE as well), dq, dk and dv of every sequence against the
float64 autograd of that sequence alone; their padding rows must be 0.
Then the errors a user gets: bad offsets.

    python3 scripts/gpu/python-varlen-check.py   # carry .gpu-carry
"""

import importlib.util
import math
import os
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "python_check", os.path.join(HERE, "python-check.py"))
python_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(python_check)

PADDING = 3
CASES = [
    # dtype, Hq, Hkv, D, Dv, causal, window, softcap, lengths q, lengths k,
    # packed qkv, lse in the loss
    ("bf16", 8, 2, 128, 128, True, None, None, [0, 1, 17, 1000, 4097],
     None, False, False),
    ("f16", 4, 4, 64, 64, False, None, None, [70, 5, 33, 129, 1],
     [20, 90, 0, 1, 130], False, True),
    ("bf16", 4, 2, 128, 128, False, (64, 64), None, [300, 2000, 1], None,
     False, False),
    ("bf16", 2, 2, 256, 256, True, None, 30.0, [513, 7, 1024], None, False,
     True),
    ("bf16", 4, 4, 128, 128, True, None, None, [256, 1000, 3], None, True,
     False),
    ("bf16", 8, 2, 128, 128, True, None, None, [0, 1, 17, 1000, 4097],
     [5, 0, 300, 1000, 4097], False, True),
]


def finite_rows(lse, torch):
    """lse with its -inf rows (no visible key) as 0: what a loss reads."""
    return torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))


def run_case(flashmlir, torch, case, seed):
    (dtype_name, hq, hkv, d, dv, causal, window, softcap, lengths_q,
     lengths_k, packed, lse_grad) = case
    lengths_k = lengths_k or lengths_q
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device="cuda").to(dtype)

    def offsets(lengths):
        out = [0]
        for n in lengths:
            out.append(out[-1] + n)
        return out

    cu_q, cu_k = offsets(lengths_q), offsets(lengths_k)
    total_q, total_k = cu_q[-1] + PADDING, cu_k[-1] + PADDING
    if packed:  # slices of one (total, 3, H, D) tensor: strided rows
        qkv = rand(total_q, 3, hq, d).requires_grad_()
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        leaves = (qkv,)
    else:
        q, k, v = (rand(total_q, hq, d).requires_grad_(),
                   rand(total_k, hkv, d).requires_grad_(),
                   rand(total_k, hkv, dv).requires_grad_())
        leaves = (q, k, v)
    o, lse = flashmlir.varlen_attention(
        q, k, v, torch.tensor(cu_q, dtype=torch.int32, device="cuda"),
        torch.tensor(cu_k, dtype=torch.int32, device="cuda"),
        max(lengths_q), max(lengths_k), causal=causal, window=window,
        softcap=softcap, return_lse=True)
    # The loss weighs the sequences' rows only (the padding rows of o are
    # not written).
    do = rand(total_q, hq, dv)
    dlse = torch.randn(hq, total_q, generator=gen, device="cuda")
    end_q = cu_q[-1]
    loss = (o[:end_q].float() * do[:end_q].float()).sum()
    if lse_grad:
        loss = loss + (finite_rows(lse[:, :end_q], torch) * dlse[:, :end_q]).sum()
    loss.backward()
    torch.cuda.synchronize()
    if packed:
        grads = (qkv.grad[:, 0], qkv.grad[:, 1], qkv.grad[:, 2])
    else:
        grads = tuple(t.grad for t in leaves)
    scale = 1.0 / math.sqrt(d)
    got = {name: [] for name in ("o", "lse", "dq", "dk", "dv")}
    want = {name: [] for name in got}
    for b, (nq, nk) in enumerate(zip(lengths_q, lengths_k)):
        rows_q = slice(cu_q[b], cu_q[b] + nq)
        rows_k = slice(cu_k[b], cu_k[b] + nk)
        q64, k64, v64 = (t[rows].detach().transpose(0, 1).unsqueeze(0)
                         .double().requires_grad_()
                         for t, rows in ((q, rows_q), (k, rows_k),
                                         (v, rows_k)))
        if nq and nk:
            ref_o, ref_lse = python_check.reference(q64, k64, v64, causal,
                                                    scale, window, softcap)
            ref_loss = (ref_o * do[rows_q].transpose(0, 1).unsqueeze(0)
                        .double()).sum()
            if lse_grad:
                ref_loss = ref_loss + (finite_rows(ref_lse, torch) *
                                       dlse[:, rows_q].double()).sum()
            ref_loss.backward()
        else:
            ref_o = torch.zeros(1, hq, nq, dv, dtype=torch.float64,
                                device="cuda")
            ref_lse = torch.full((1, hq, nq), float("-inf"),
                                 dtype=torch.float64, device="cuda")
        refs = {"o": ref_o, "lse": ref_lse}
        for name, t64 in (("dq", q64), ("dk", k64), ("dv", v64)):
            refs[name] = t64.grad if t64.grad is not None else \
                torch.zeros_like(t64)
        mine = {"o": o[rows_q].transpose(0, 1), "lse": lse[:, rows_q],
                "dq": grads[0][rows_q].transpose(0, 1),
                "dk": grads[1][rows_k].transpose(0, 1),
                "dv": grads[2][rows_k].transpose(0, 1)}
        for name in got:
            got[name].append(mine[name].double().flatten())
            want[name].append(refs[name][0].flatten())
    errors = {}
    ok = True
    for name in got:
        g, w = torch.cat(got[name]), torch.cat(want[name])
        if name == "lse":
            finite = torch.isfinite(w)
            written = bool(torch.isfinite(g[finite]).all()) and \
                bool((g[~finite] == w[~finite]).all())
            err = (g - w)[finite].abs().max().item() \
                if written and finite.any() else \
                (0.0 if written else float("inf"))
            ok = ok and err <= python_check.LSE_TOLERANCE
        else:
            written = bool(torch.isfinite(g).all())
            err = python_check.rel_l2(g, w) if written else float("inf")
            ok = ok and err <= python_check.TOLERANCE[dtype_name]
        errors[name] = err
    # Padding rows belong to no sequence: o and lse still poisoned, their
    # gradients 0.
    padding_untouched = bool(torch.isnan(o[end_q:]).all()) and \
        bool(torch.isnan(lse[:, end_q:]).all()) and \
        bool((grads[0][end_q:] == 0).all()) and \
        bool((grads[1][cu_k[-1]:] == 0).all()) and \
        bool((grads[2][cu_k[-1]:] == 0).all())
    return ok and padding_untouched, errors, padding_untouched


def compiled_matches_eager(flashmlir, torch):
    """A packed causal GQA batch through a compiled function and eagerly:
    o, dk and dv must be equal (the same kernels run), dq within 1e-3 (its
    f32 sums from parallel KV blocks may add in another order)."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    lengths = [300, 17, 1000, 0, 129]
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    cu = torch.tensor(cu, dtype=torch.int32, device="cuda")
    total = int(cu[-1])

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device="cuda").to(
            torch.bfloat16)
    base = [rand(total, 4, 128), rand(total, 2, 128), rand(total, 2, 128)]
    do = rand(total, 4, 128)

    def block(q, k, v):
        o = flashmlir.varlen_attention(q, k, v, cu, cu, max(lengths),
                                       max(lengths), causal=True)
        return o * 2.0

    compiled = torch.compile(block, fullgraph=True)
    results = []
    for fn in (block, compiled):
        q, k, v = (t.clone().requires_grad_() for t in base)
        o = fn(q, k, v)
        o.backward(do)
        results.append([o.detach()] + [t.grad for t in (q, k, v)])
    torch.cuda.synchronize()
    diffs = [(a.float() - b.float()).abs().max().item()
             for a, b in zip(*results)]
    dq_err = python_check.rel_l2(results[1][1].double(),
                                 results[0][1].double())
    ok = diffs[0] == diffs[2] == diffs[3] == 0.0 and dq_err <= 1e-3
    return ok, "max |compiled - eager| o, dq, dk, dv = %s (dq rel %.1e)" % (
        ", ".join("%.1e" % d for d in diffs), dq_err)


def main():
    package = os.environ.get("FA_PYTHON_PACKAGE",
                             ".gpu-carry/python/flashmlir-python.tar.xz")
    if package:
        work = tempfile.mkdtemp(prefix="flashmlir-py.")
        with tarfile.open(package) as tar:
            tar.extractall(work)
        sys.path.insert(0, work)
        os.environ.pop("FLASHMLIR_LIBRARY", None)
        os.environ.setdefault("FLASHMLIR_CACHE_DIR",
                              os.path.join(work, "cache"))
    import torch
    import flashmlir
    import flashmlir.varlen
    flashmlir.varlen.torch = python_check.PoisonedTorch(torch)
    print("flashmlir:", flashmlir.__file__, "compiler:",
          flashmlir.compiler_version())
    failures = 0
    for n, case in enumerate(CASES):
        try:
            ok, errors, padding = run_case(flashmlir, torch, case, seed=n)
        except Exception as e:  # report and go on
            ok, errors, padding = False, {}, False
            print("ERROR", case, "%s: %s" % (type(e).__name__, e))
        failures += not ok
        print("%s varlen %s: %s; padding rows %s" % (
            "PASS" if ok else "FAIL", case,
            " ".join("%s=%.1e" % kv for kv in errors.items()),
            "untouched (gradients 0)" if padding else "WRITTEN"))
    # torch.compile(fullgraph=True) traces through varlen_attention (the
    # custom ops flashmlir::varlen_forward / varlen_backward): output and
    # gradients equal eager's.
    try:
        ok, what = compiled_matches_eager(flashmlir, torch)
    except Exception as e:  # report and go on
        ok, what = False, "%s: %s" % (type(e).__name__, e)
    failures += not ok
    print("%s torch.compile(fullgraph=True): %s" % ("PASS" if ok else "FAIL",
                                                   what))
    # What a user gets wrong is refused with a clear error.
    q = torch.randn(10, 2, 64, device="cuda", dtype=torch.bfloat16)
    cu = torch.tensor([0, 10], dtype=torch.int32, device="cuda")
    for label, call, expected in (
            ("int64 offsets", lambda: flashmlir.varlen_attention(
                q, q, q, cu.long(), cu, 10, 10), ValueError),
            ("max_seqlen_q past the rows", lambda: flashmlir.varlen_attention(
                q, q, q, cu, cu, 11, 10), ValueError)):
        try:
            call()
            ok, what = False, "accepted"
        except expected as e:
            ok, what = True, str(e)
        except Exception as e:  # the wrong kind of error
            ok, what = False, "%s: %s" % (type(e).__name__, e)
        failures += not ok
        print("%s refuses %s: %s" % ("PASS" if ok else "FAIL", label, what))
    total = len(CASES) + 4
    print("summary: %d/%d passed" % (total - failures, total))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
