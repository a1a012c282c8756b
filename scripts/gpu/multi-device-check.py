#!/usr/bin/env python3
"""flashmlir.attention on every CUDA device of the machine (a context per
device, kernels per device), against a float64 reference, with poisoned
outputs (python-check.py's reference and PoisonedTorch):

  - forward + autograd (o, lse, dq, dk, dv) on each device, the outputs on
    the inputs' device, torch's current device left as it was;
  - a call on device d while torch's current device is another one;
  - a call on a side stream of device d (only that stream synchronized);
  - varlen_attention on each device.

Needs >= 2 GPUs (else it says so and exits 0 after the one-device cases).
Run on the GPU machine after carrying .gpu-carry:

    python3 scripts/gpu/multi-device-check.py [--package TARBALL]
"""

import argparse
import importlib.util
import itertools
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_python_check():
    spec = importlib.util.spec_from_file_location(
        "python_check", os.path.join(HERE, "python-check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_dense(flashmlir, torch, pc, device, seed, stream=None):
    """One causal GQA bf16 problem on `device` through autograd; returns
    (ok, text)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    B, Hq, Hkv, N, D = 2, 4, 2, 1000, 128

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=device).to(
            torch.bfloat16).requires_grad_()
    q, k, v = rand(B, Hq, N, D), rand(B, Hkv, N, D), rand(B, Hkv, N, D)
    do = torch.randn(B, Hq, N, D, generator=gen, device=device).to(
        torch.bfloat16)
    before = torch.cuda.current_device()
    if stream is None:
        o, lse = flashmlir.attention(q, k, v, causal=True, return_lse=True)
        (o.float() * do.float()).sum().backward()
        torch.cuda.synchronize(device)
    else:
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            o, lse = flashmlir.attention(q, k, v, causal=True,
                                         return_lse=True)
            (o.float() * do.float()).sum().backward()
        stream.synchronize()
    after = torch.cuda.current_device()
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    o_ref, lse_ref = pc.reference(q64, k64, v64, True, 1 / math.sqrt(D),
                                  None, None)
    (o_ref * do.double()).sum().backward()
    errors = {"o": pc.rel_l2(o.double(), o_ref),
              "lse": (lse.double() - lse_ref).abs().max().item(),
              "dq": pc.rel_l2(q.grad.double(), q64.grad),
              "dk": pc.rel_l2(k.grad.double(), k64.grad),
              "dv": pc.rel_l2(v.grad.double(), v64.grad)}
    bounds = {"o": pc.TOLERANCE["bf16"], "lse": pc.LSE_TOLERANCE}
    ok = all(e <= bounds.get(name, pc.TOLERANCE["bf16"])
             for name, e in errors.items())
    on_device = all(t.device == torch.device(device)
                    for t in (o, lse, q.grad, k.grad, v.grad))
    ok = ok and on_device and before == after
    text = " ".join("%s=%.1e" % kv for kv in errors.items())
    text += " outputs on %s: %s; current device %d -> %d" % (
        device, on_device, before, after)
    return ok, text


def check_varlen(flashmlir, torch, pc, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    lengths = [0, 17, 1000, 1]
    H, D = 2, 64
    total = sum(lengths)
    offsets = torch.tensor([0] + list(itertools.accumulate(lengths)),
                           dtype=torch.int32, device=device)
    q, k, v = (torch.randn(total, H, D, generator=gen, device=device).to(
        torch.float16) for _ in range(3))
    o = flashmlir.varlen_attention(q, k, v, offsets, offsets, max(lengths),
                                   max(lengths), causal=True)
    torch.cuda.synchronize(device)
    worst = 0.0
    for b, n in enumerate(lengths):
        if n == 0:
            continue
        s = slice(int(offsets[b]), int(offsets[b + 1]))
        part = [t[s].transpose(0, 1).unsqueeze(0) for t in (q, k, v)]
        want, _ = pc.reference(*part, True, 1 / math.sqrt(D), None, None)
        worst = max(worst, pc.rel_l2(o[s].transpose(0, 1).unsqueeze(0)
                                     .double(), want))
    ok = worst <= pc.TOLERANCE["f16"] and o.device == torch.device(device)
    return ok, "o=%.1e over %s" % (worst, lengths)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package",
                    default=".gpu-carry/python/flashmlir-python.tar.xz",
                    help='tarball from make-python.sh; "" to use sys.path')
    args = ap.parse_args()
    pc = load_python_check()
    if args.package and not pc.use_package(args.package):
        return 1
    import torch
    import flashmlir
    import flashmlir.torch_ops
    flashmlir.torch_ops.torch = pc.PoisonedTorch(torch)
    count = torch.cuda.device_count()
    print("devices:", count, [torch.cuda.get_device_name(d)
                              for d in range(count)])
    results = []
    devices = list(range(count))[::-1]  # the last first: not the default
    for d in devices:
        dev = "cuda:%d" % d
        results.append(("autograd on %s" % dev,) +
                       check_dense(flashmlir, torch, pc, dev, seed=d))
        results.append(("varlen on %s" % dev,) +
                       check_varlen(flashmlir, torch, pc, dev, seed=10 + d))
        stream = torch.cuda.Stream(device=dev)
        results.append(("side stream of %s" % dev,) +
                       check_dense(flashmlir, torch, pc, dev, seed=20 + d,
                                   stream=stream))
    if count >= 2:
        with torch.cuda.device(1):
            results.append(("cuda:0 while cuda:1 is current",) +
                           check_dense(flashmlir, torch, pc, "cuda:0",
                                       seed=30))
        kernels = {key[2] for key in flashmlir.torch_ops._choices}
        results.append(("forward kernels per device", kernels ==
                        set(range(count)), "devices %s" % sorted(kernels)))
    else:
        print("only one CUDA device: the cross-device cases need two")
    failures = 0
    for name, ok, text in results:
        failures += not ok
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, text))
    print("summary: %d/%d passed" % (len(results) - failures, len(results)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
