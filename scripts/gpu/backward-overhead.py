#!/usr/bin/env python3
"""Where the backward's time goes between the raw kernels and autograd
(GPU machine; the package and cache from scripts/gpu/make-bench.sh):

    PYTHONPATH=<package> FLASHMLIR_CACHE_DIR=<cache> \
        python3 scripts/gpu/backward-overhead.py [--hdim 128] [--seqlen 8192]

Times, on one (B, H, N, D) problem of the FA3 sweep and the same tensors:
  autograd   torch.autograd.grad through flashmlir.attention (what the
             benchmark times; also with the scale passed explicitly, as
             the benchmark passes it)
  launch     Kernel.backward_launch on preallocated outputs and workspace,
             with the real O and LSE of the forward
  const-lse  the same launch with LSE = 8 everywhere (scripts/gpu/bench.py's
             timing-only inputs)
  fa2        torch.autograd.grad through SDPA flash, for scale
and the CPU time of one Function.backward call.
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import flashmlir
from flashmlir import bench


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hdim", type=int, default=128)
    ap.add_argument("--seqlen", type=int, default=8192)
    args = ap.parse_args()
    shape = bench.shapes([args.hdim], [args.seqlen], [False])[0]
    b, h, n, d, _ = shape
    q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(4))
    fl = bench.flops(shape, "bwd")
    tf = lambda ms: fl / (ms * 1e-3) / 1e12
    med = lambda fn: do_bench(fn, warmup=25, rep=200, return_mode="median")

    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
    o, lse = flashmlir.attention(qg, kg, vg, return_lse=True)
    grads = lambda: torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)
    grads()
    rows = {"autograd": med(grads)}
    # As the benchmark calls it: the scale passed explicitly (another config,
    # the same value).
    o2 = flashmlir.attention(qg, kg, vg, scale=1.0 / math.sqrt(d))
    grads2 = lambda: torch.autograd.grad(o2, (qg, kg, vg), do,
                                         retain_graph=True)
    grads2()
    rows["autograd-explicit-scale"] = med(grads2)
    rows["autograd-again"] = med(grads)

    kern = flashmlir.compile(bench.config_of(shape), backward=True)
    dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
    ws = torch.empty(kern.workspace_bytes(), dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream

    def launch(lse_t):
        kern.backward_launch(q.data_ptr(), k.data_ptr(), v.data_ptr(),
                             o.data_ptr(), do.data_ptr(), lse_t.data_ptr(),
                             dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                             ws.data_ptr(), stream=stream)
    rows["launch"] = med(lambda: launch(lse))
    const = torch.full_like(lse, 8.0)
    rows["const-lse"] = med(lambda: launch(const))
    kx, vx, qx = (t.clone().requires_grad_() for t in (k, v, q))
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = F.scaled_dot_product_attention(qx, kx, vx)
    rows["fa2"] = med(lambda: torch.autograd.grad(out, (qx, kx, vx), do,
                                                  retain_graph=True))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        launch(lse)
    cpu_launch = (time.perf_counter() - t0) / 20 * 1e6
    torch.cuda.synchronize()
    print("shape b%d h%d n%d d%d; backward_launch CPU %.0f us per call"
          % (b, h, n, d, cpu_launch))
    for name, ms in rows.items():
        print("%-24s %8.3f ms %7.1f TFLOP/s" % (name, ms, tf(ms)))


if __name__ == "__main__":
    main()
