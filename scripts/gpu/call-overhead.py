#!/usr/bin/env python3
"""CPU cost of one flashmlir.attention call on a tiny problem (B = 1, H = 1,
N = 128, D = 64, bf16), where launch overhead is all there is, beside torch's
SDPA: calls enqueued back to back, then one synchronize; microseconds per
call (best of 5 rounds). With --profile, cProfile's top entries of ours.
Run on the GPU machine with the package importable:

    python3 scripts/gpu/call-overhead.py [--calls 2000] [--profile]
"""

import argparse
import time


def per_call_us(torch, fn, calls):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import flashmlir

    q, k, v = (torch.randn(1, 1, 128, 64, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    with torch.no_grad():
        ours = per_call_us(torch, lambda: flashmlir.attention(q, k, v),
                           args.calls)
        sdpa = per_call_us(
            torch, lambda: F.scaled_dot_product_attention(q, k, v),
            args.calls)
    print("flashmlir.attention %.1f us/call, torch SDPA %.1f us/call"
          % (ours, sdpa), flush=True)
    if args.profile:
        import cProfile
        import pstats
        with torch.no_grad():
            cProfile.runctx("for _ in range(2000): f()",
                            {"f": lambda: flashmlir.attention(q, k, v)}, {},
                            "/tmp/call.prof")
        pstats.Stats("/tmp/call.prof").sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
