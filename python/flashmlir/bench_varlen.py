"""python -m flashmlir.bench --varlen: packed sequences against the dense
batch of the same tokens, in one process.

For each head dim and mask: 16k tokens (hidden size 2048, bf16) as a dense
batch of 8 x 2048 (flashmlir.attention, and cuDNN through torch SDPA), as 8
equal packed sequences of 2048 and as 8 mixed lengths (512 ... 5120) of
flashmlir.varlen_attention. TFLOP/s count each sequence's own products
(real tokens only); forward as the call, backward as torch.autograd.grad of
one forward's output, both timed with triton.testing.do_bench (median).
The equal packed batch must match the dense one (the same math on the same
rows) before it is timed.
"""

import json
import math
import os
import time

TOKENS, HIDDEN = 16384, 2048
EQUAL = [2048] * 8
MIXED = [512, 1024, 4096, 3072, 2048, 5120, 128, 384]


def _flops(lengths, heads, hdim, causal, direction):
    f = sum(4.0 * heads * n * n * hdim * (0.5 if causal else 1.0)
            for n in lengths)
    return f * (2.5 if direction == "bwd" else 1.0)


def _time(torch, do_bench, fn, inputs, grad_out, direction, warmup, rep):
    if direction == "fwd":
        with torch.no_grad():
            return do_bench(lambda: fn(*inputs), warmup=warmup, rep=rep,
                            return_mode="median")
    leaves = tuple(t.detach().requires_grad_() for t in inputs)
    out = fn(*leaves)
    return do_bench(lambda: torch.autograd.grad(out, leaves, grad_out,
                                                retain_graph=True),
                    warmup=warmup, rep=rep, return_mode="median")


def run(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    import flashmlir

    rows = []
    print("flashmlir %s; torch %s; %s" % (
        flashmlir.compiler_version(), torch.__version__,
        torch.cuda.get_device_name()), flush=True)
    for hdim in args.hdims:
        heads = HIDDEN // hdim
        for causal in args.causal:
            gen = torch.Generator(device="cuda").manual_seed(args.seed + hdim)
            q, k, v, do = (torch.randn(TOKENS, heads, hdim, generator=gen,
                                       device="cuda", dtype=torch.bfloat16)
                           for _ in range(4))

            def dense_inputs():
                # (16384, H, D) as (8, H, 2048, D) views of the same rows.
                return tuple(t.view(8, 2048, heads, hdim).transpose(1, 2)
                             for t in (q, k, v))

            def varlen(lengths):
                cu = torch.tensor([0] + [sum(lengths[:i + 1])
                                         for i in range(len(lengths))],
                                  dtype=torch.int32, device="cuda")
                longest = max(lengths)
                return lambda q, k, v: flashmlir.varlen_attention(
                    q, k, v, cu, cu, longest, longest, causal=causal)

            def dense(q, k, v):
                return flashmlir.attention(q, k, v, causal=causal)

            def cudnn(q, k, v):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v,
                                                          is_causal=causal)
            # The equal packed batch is the dense one, row for row.
            with torch.no_grad():
                want = dense(*dense_inputs()).transpose(1, 2).reshape(
                    TOKENS, heads, hdim).float()
                got = varlen(EQUAL)(q, k, v).float()
                err = ((got - want).norm() / want.norm()).item()
            row = {"hdim": hdim, "heads": heads, "causal": causal,
                   "equal_vs_dense_rel_err": err}
            dense_do = do.view(8, 2048, heads, hdim).transpose(1, 2)
            cases = [("dense 8x2048", dense, dense_inputs(), dense_do, EQUAL),
                     ("cudnn 8x2048", cudnn, dense_inputs(), dense_do, EQUAL),
                     ("varlen equal", varlen(EQUAL), (q, k, v), do, EQUAL),
                     ("varlen mixed", varlen(MIXED), (q, k, v), do, MIXED)]
            for direction in args.directions:
                for name, fn, inputs, grad_out, lengths in cases:
                    entry = {}
                    try:
                        ms = _time(torch, do_bench, fn, inputs, grad_out,
                                   direction, args.warmup, args.rep)
                        entry = {"ms": ms, "tflops": _flops(
                            lengths, heads, hdim, causal, direction) /
                            (ms * 1e-3) / 1e12}
                    except Exception as e:  # a backend may not take it
                        entry = {"error": "%s: %s" % (type(e).__name__,
                                                      str(e)[:200])}
                    row.setdefault(direction, {})[name] = entry
                    print("%s hd%d%s %-13s %s" % (
                        direction, hdim, " causal" if causal else "", name,
                        "%.1f TFLOP/s" % entry["tflops"]
                        if "tflops" in entry else entry["error"]),
                        flush=True)
                d = row[direction]
                if "tflops" in d.get("varlen equal", {}) and \
                        "tflops" in d.get("varlen mixed", {}):
                    print("%s hd%d%s mixed / equal = %.2f, equal / dense = "
                          "%.2f" % (direction, hdim,
                                    " causal" if causal else "",
                                    d["varlen mixed"]["tflops"] /
                                    d["varlen equal"]["tflops"],
                                    d["varlen equal"]["tflops"] /
                                    d["dense 8x2048"]["tflops"]), flush=True)
            rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench-varlen-%s-%s.json" % (
        args.tag, time.strftime("%Y-%m-%d")))
    with open(path, "w") as f:
        json.dump({"tokens": TOKENS, "hidden": HIDDEN, "equal": EQUAL,
                   "mixed": MIXED, "rows": rows}, f, indent=1)
    print("wrote", path)
    bad = [r for r in rows if not r["equal_vs_dense_rel_err"] < 1e-2]
    print("check: equal packed batch matches the dense one on %d/%d"
          % (len(rows) - len(bad), len(rows)))
    return 1 if bad else 0
