#!/usr/bin/env python3
"""CPU cost of one flashmlir.attention call on a tiny problem (B = 1, H = 1,
N = 128, D = 64, bf16), where launch overhead is all there is, beside torch's
SDPA and beside the same kernel launched through the C API alone
(Kernel.forward on fixed pointers: no checks, no allocation, no Python
layer above it). Two measures, microseconds per call:

  cpu:        the enqueueing alone: rounds of --calls (default 100: fewer
              than the driver's queue holds, so the GPU's pace does not
              enter), the stream drained between rounds, best round;
  throughput: 2000 calls back to back, then one synchronize (the older
              figure; bound by the GPU where a call's kernel is longer
              than its CPU cost).

With --profile, cProfile's top entries of ours. Run on the GPU machine with
the package importable:

    python3 scripts/gpu/call-overhead.py [--calls 100] [--profile]
"""

import argparse
import time


def cpu_us(torch, fn, calls, rounds=200):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def throughput_us(torch, fn, calls=2000):
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
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import flashmlir
    from flashmlir import torch_ops

    q, k, v = (torch.randn(1, 1, 128, 64, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(1, 1, 128, device="cuda", dtype=torch.float32)
    with torch.no_grad():
        flashmlir.attention(q, k, v)
        # The repeated call (the thin path) must give what the first call
        # and SDPA give, with and without lse, into fresh outputs.
        reference = F.scaled_dot_product_attention(q.double(), k.double(),
                                                   v.double())
        def poisoned_pool():
            # Freed NaN blocks of the outputs' sizes: torch's caching
            # allocator hands them to the next outputs of those sizes.
            del_me = [torch.full_like(q, float("nan")),
                      torch.full(q.shape[:3], float("nan"), device="cuda")]
            del del_me

        for _ in range(3):
            poisoned_pool()
            o = flashmlir.attention(q, k, v)
            poisoned_pool()
            o2, lse2 = flashmlir.attention(q, k, v, return_lse=True)
            s = (q.double() @ k.double().transpose(-1, -2)) / 8.0
            for got, want in ((o, reference), (o2, reference),
                              (lse2, torch.logsumexp(s, -1))):
                err = ((got.double() - want).norm() / want.norm()).item()
                if not err < 1e-2:
                    raise SystemExit("thin call path: relative error %.3g"
                                     % err)
        print("thin call path: repeated calls match float64 (o, lse)")
        o = torch.empty_like(q)
        config = torch_ops._config(q, k, v, False, None, None, None)
        kernel, _ = torch_ops._forward_kernel(config, q.device, None)
        pointers = [t.data_ptr() for t in (q, k, v, o, lse)]
        stream = torch.cuda.current_stream().cuda_stream
        calls = {
            "flashmlir.attention": lambda: flashmlir.attention(q, k, v),
            "C API launch (Kernel.forward)":
                lambda: kernel.forward(*pointers, stream=stream),
            "flashmlir.attention(return_lse)":
                lambda: flashmlir.attention(q, k, v, return_lse=True),
            "torch SDPA": lambda: F.scaled_dot_product_attention(q, k, v),
            # The pieces the thin path is made of, each alone.
            "  q.new_empty(o's shape)": lambda: q.new_empty((1, 1, 128, 64)),
            "  torch.empty(dtype, device)":
                lambda: torch.empty((1, 1, 128, 64), dtype=q.dtype,
                                    device=q.device),
            "  current raw stream": lambda:
                torch._C._cuda_getCurrentRawStream(q.get_device()),
        }
        for name, fn in calls.items():
            print("%-32s cpu %.2f us/call, throughput %.2f us/call"
                  % (name, cpu_us(torch, fn, args.calls),
                     throughput_us(torch, fn)), flush=True)
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
