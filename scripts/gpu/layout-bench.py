#!/usr/bin/env python3
"""Times flashmlir.attention's forward on (B, H, N, D) tensors against the
same problem given as (B, N, H, D) views and as slices of a packed
(B, N, 3, H, D) QKV tensor (read in place through TMA, no copy), beside
torch's cuDNN SDPA on the contiguous tensors. Run on the GPU machine with
the package importable (scripts/gpu/bench-python.sh sets that up):

    python3 scripts/gpu/layout-bench.py [--hdims 64,128] [--seqlens 2048,8192]
"""

import argparse
import math


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap.add_argument("--hdims", type=ints, default=[64, 128])
    ap.add_argument("--seqlens", type=ints, default=[2048, 8192])
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    import flashmlir

    for d in args.hdims:
        for n in args.seqlens:
            for causal in (False, True):
                b, h = 16384 // n, 2048 // d
                qkv = torch.randn(b, n, 3, h, d, device="cuda",
                                  dtype=torch.bfloat16)
                packed = [qkv[:, :, i].transpose(1, 2) for i in range(3)]
                bnhd = [t.contiguous().transpose(1, 2) for t in
                        (qkv[:, :, i] for i in range(3))]
                dense = [t.contiguous() for t in packed]
                flops = 4.0 * b * h * n * n * d / (2 if causal else 1)
                row = []
                for name, (q, k, v) in (("bhnd", dense), ("bnhd", bnhd),
                                        ("packed", packed)):
                    fn = lambda: flashmlir.attention(  # noqa: E731
                        q, k, v, causal=causal, runtime_shapes=False)
                    ref = F.scaled_dot_product_attention(
                        dense[0].float(), dense[1].float(), dense[2].float(),
                        is_causal=causal)
                    err = ((fn().float() - ref).norm() / ref.norm()).item()
                    ms = do_bench(fn, warmup=25, rep=100)
                    row.append("%s %.1f (err %.1e)" % (name, flops / ms / 1e9,
                                                       err))
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    ms = do_bench(lambda: F.scaled_dot_product_attention(
                        *dense, is_causal=causal), warmup=25, rep=100)
                row.append("cudnn %.1f" % (flops / ms / 1e9))
                print("d%-3d N=%-5d %-6s %s" % (d, n, "causal" if causal
                                                else "", "  ".join(row)),
                      flush=True)


if __name__ == "__main__":
    main()
