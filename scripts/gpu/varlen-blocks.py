#!/usr/bin/env python3
"""Block sizes of the varlen forward on the GPU machine: the same packed
batches (16k tokens, hidden 2048, bf16; 8 x 2048 and 8 mixed lengths) on
varlen kernels compiled with each (block_q, block_kv), beside the dense
runtime-shapes kernel of the 8 x 2048 batch. Each kernel's output is first
checked against float32 torch SDPA per sequence (relative L2 <= 1e-2);
timing is triton.testing.do_bench's median, rounds alternating the order.

    python3 scripts/gpu/varlen-blocks.py --hdim 64 --blocks 128x128,192x128
"""

import argparse
import os
import sys
import tarfile
import tempfile

EQUAL = [2048] * 8
MIXED = [512, 1024, 4096, 3072, 2048, 5120, 128, 384]
TOKENS, HIDDEN = 16384, 2048


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hdim", type=int, default=64)
    ap.add_argument("--blocks", default="128x128,192x128")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="flashmlir-py.")
    with tarfile.open(".gpu-carry/python/flashmlir-python.tar.xz") as tar:
        tar.extractall(work)
    sys.path.insert(0, work)
    os.environ.pop("FLASHMLIR_LIBRARY", None)
    os.environ.setdefault("FLASHMLIR_CACHE_DIR", os.path.join(work, "cache"))
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench
    import flashmlir
    from flashmlir import _capi

    d = args.hdim
    heads = HIDDEN // d
    blocks = [tuple(int(x) for x in b.split("x"))
              for b in args.blocks.split(",")]
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(TOKENS, heads, d, generator=gen, device="cuda",
                           dtype=torch.bfloat16) for _ in range(3))
    views = [t.unsqueeze(0).transpose(1, 2) for t in (q, k, v)]
    o = torch.empty(1, heads, TOKENS, d, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(1, heads, TOKENS, dtype=torch.float32, device="cuda")
    strides = _capi.faForwardStrides()
    for name, t in (("q", views[0]), ("k", views[1]), ("v", views[2]),
                    ("o", o)):
        getattr(strides, name)[:] = t.stride()
    strides.lse[:] = lse.stride()
    stream = torch.cuda.current_stream().cuda_stream

    def flops(lengths, causal):
        return sum(4.0 * heads * n * n * d * (0.5 if causal else 1.0)
                   for n in lengths)

    for causal in (False, True):
        launches = {}
        for lengths, label in ((EQUAL, "equal"), (MIXED, "mixed")):
            cu = torch.tensor([0] + [sum(lengths[:i + 1])
                                     for i in range(len(lengths))],
                              dtype=torch.int32, device="cuda")
            for bq, bk in blocks:
                kernel = flashmlir.compile(flashmlir.Config(
                    heads_q=heads, heads_kv=heads, head_dim=d, head_dim_v=d,
                    causal=causal, varlen=True, block_q=bq, block_kv=bk))

                def launch(kernel=kernel, cu=cu, lengths=lengths):
                    kernel.forward_varlen(
                        views[0].data_ptr(), views[1].data_ptr(),
                        views[2].data_ptr(), o.data_ptr(), lse.data_ptr(),
                        cu.data_ptr(), cu.data_ptr(),
                        sequences=len(lengths), max_seqlen_q=max(lengths),
                        total_q=TOKENS, total_kv=TOKENS, strides=strides,
                        stream=stream)
                o.fill_(float("nan"))
                launch()
                torch.cuda.synchronize()
                errs = []
                for b, n in enumerate(lengths):
                    rows = slice(int(cu[b]), int(cu[b]) + n)
                    ref = F.scaled_dot_product_attention(
                        *(t[rows].transpose(0, 1).float()
                          for t in (q, k, v)), is_causal=causal)
                    got = o[0, :, rows].float()
                    errs.append(((got - ref).norm() / ref.norm()).item())
                err = max(errs)
                status = "ok" if err <= 1e-2 else "WRONG"
                print("hd%d%s %s %dx%d: max rel err %.1e %s" % (
                    d, " causal" if causal else "", label, bq, bk, err,
                    status), flush=True)
                launches["%s %dx%d" % (label, bq, bk)] = (
                    launch, flops(lengths, causal))
        for r in range(args.rounds):
            names = sorted(launches)
            if r % 2:
                names.reverse()
            for name in names:
                launch, f = launches[name]
                ms = do_bench(launch, warmup=25, rep=100,
                              return_mode="median")
                print("round %d hd%d%s %-16s %.1f TFLOP/s" % (
                    r + 1, d, " causal" if causal else "", name,
                    f / (ms * 1e-3) / 1e12), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
