"""python -m flashmlir.bench: FlashMLIR's kernels beside PyTorch's attention
backends, in one process, on the same tensors.

On a GPU machine (torch, triton; matplotlib for the plot):

    python -m flashmlir.bench [--hdims 64,128,256] [--seqlens 512,...,16384]
        [--causal both] [--directions fwd,bwd]
        [--peers cudnn,flash,mem-efficient,flex[,fa4]] [--out docs/perf]
        [--tag NAME]

Shapes are the FlashAttention-3 paper's: 16k tokens (batch = 16384 / N) and
hidden size 2048 (heads = 2048 / hdim), bf16, MHA. Every implementation is
timed with triton.testing.do_bench (median; L2 flushed between repeats), the
forward as the call, the backward as torch.autograd.grad of one forward's
output. Before timing, FlashMLIR's outputs are poisoned with NaN and checked
on the first (batch, head) against a float64 reference (forward and every
gradient; ||out - ref|| / ||ref||); the peers' outputs are checked the same
way, for the record. Prints a table of TFLOP/s with ratios to cuDNN, writes
JSON and a PNG plot to --out.

On a machine without a GPU (or with one, before carrying the cache away):

    python -m flashmlir.bench --precompile [--chip sm_90] [--jobs 2] ...

compiles every kernel the run needs into the kernel cache
($FLASHMLIR_CACHE_DIR), so that the GPU run loads them instead of spending
minutes in the compiler (no torch needed).
"""

import argparse
import dataclasses
import datetime
import json
import math
import os
import sys
import time

from . import Config, FlashMLIRError, compiler_version

TOKENS = 16384
HIDDEN = 2048
IMPLS = ("flashmlir", "cudnn", "flash", "mem-efficient", "flex", "fa4")
LABELS = {"flashmlir": "FlashMLIR", "cudnn": "cuDNN (SDPA)",
          "flash": "FA2 (SDPA flash)", "mem-efficient": "mem-efficient (SDPA)",
          "flex": "FlexAttention", "fa4": "FA4 (CuTe DSL)"}
RATIO_LABELS = {"cudnn": "cuDNN", "flash": "FA2", "fa4": "FA4"}
BWD_FLOP_FACTOR = 2.5  # 5 matmuls in the backward vs 2 in the forward


def shapes(hdims, seqlens, causals):
    """(batch, heads, seqlen, hdim, causal) of the FA3 paper's sweep."""
    out = []
    for hdim in hdims:
        for causal in causals:
            for n in seqlens:
                out.append((max(TOKENS // n, 1), HIDDEN // hdim, n, hdim,
                            causal))
    return out


def flops(shape, direction):
    b, h, n, d, causal = shape
    f = 4.0 * b * h * n * n * d
    if causal:
        f /= 2
    return f * (BWD_FLOP_FACTOR if direction == "bwd" else 1.0)


def config_of(shape, chip=None):
    b, h, n, d, causal = shape
    return Config(dtype="bf16", batch=b, heads_q=h, seq_q=n, head_dim=d,
                  causal=causal, chip=chip)


def _precompile_one(job):
    shape, backward, chip, runtime_shapes = job
    from . import precompile
    t0 = time.time()
    config = config_of(shape, chip)
    if runtime_shapes and not backward:
        config = dataclasses.replace(config, runtime_shapes=True)
    try:
        hit = precompile(config, backward=backward)
        return shape, backward, hit, time.time() - t0, None
    except FlashMLIRError as e:
        return shape, backward, False, time.time() - t0, str(e)


def precompile_all(args, todo):
    """Fills the kernel cache with every kernel of the sweep; no GPU."""
    import concurrent.futures
    import multiprocessing
    jobs = [(shape, direction == "bwd", args.chip, args.runtime_shapes)
            for shape in todo for direction in args.directions]
    ctx = multiprocessing.get_context("fork")
    failed = 0
    with concurrent.futures.ProcessPoolExecutor(args.jobs,
                                                mp_context=ctx) as pool:
        for shape, backward, hit, secs, err in pool.map(_precompile_one,
                                                        jobs):
            name = "%s %s" % ("bwd" if backward else "fwd", _shape_name(shape))
            if err:
                failed += 1
                print("FAIL %s: %s" % (name, err), flush=True)
            else:
                print("%s %s (%.1fs)" % ("hit " if hit else "built", name,
                                         secs), flush=True)
    print("precompile: %d kernels for %s, %d failed, cache %s"
          % (len(jobs), args.chip, failed,
             os.environ.get("FLASHMLIR_CACHE_DIR", "~/.cache/flashmlir")))
    return 1 if failed else 0


def _shape_name(shape):
    b, h, n, d, causal = shape
    return "b%d h%d n%d d%d%s" % (b, h, n, d, " causal" if causal else "")


# --- GPU side ---------------------------------------------------------------


def rel_l2(out, ref):
    """||out - ref|| / ||ref||; inf if out has a NaN (an unwritten element
    of a poisoned output)."""
    out = out.double()
    if not bool(out.isfinite().all()):
        return float("inf")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def reference_head(q, k, v, do, causal, scale):
    """float64 O and dQ/dK/dV of the first (batch, head): MHA heads are
    independent, so one head's slice is its whole problem."""
    import torch
    q1, k1, v1 = (t[0, 0].double().requires_grad_() for t in (q, k, v))
    s = (q1 @ k1.T) * scale
    if causal:
        n, m = s.shape
        keep = torch.ones(n, m, dtype=torch.bool, device=s.device).tril(m - n)
        s = s.masked_fill(~keep, float("-inf"))
    o = torch.softmax(s, dim=-1) @ v1
    grads = torch.autograd.grad(o, (q1, k1, v1), do[0, 0].double())
    return o.detach(), grads


class Peers:
    """The attention implementations, each a function (q, k, v) -> o."""

    # torch.compile(flex_attention), shared by every shape of the sweep.
    _compiled_flex = None

    def __init__(self, torch, causal, scale, runtime_shapes=False):
        self.torch = torch
        self.causal = causal
        self.scale = scale
        self.runtime_shapes = runtime_shapes

    def sdpa(self, backend):
        import torch.nn.functional as F
        from torch.nn.attention import sdpa_kernel

        def run(q, k, v):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(
                    q, k, v, is_causal=self.causal, scale=self.scale)
        return run

    def flex(self, n):
        from torch.nn.attention.flex_attention import (create_block_mask,
                                                       flex_attention)
        if Peers._compiled_flex is None:
            # Dynamic shapes: one compile per head dim, mask and direction
            # instead of one per shape (minutes over the sweep).
            Peers._compiled_flex = self.torch.compile(flex_attention,
                                                      dynamic=True)
        mask = None
        if self.causal:
            mask = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None,
                                     n, n, device="cuda")
        fn = Peers._compiled_flex

        def run(q, k, v):
            return fn(q, k, v, block_mask=mask, scale=self.scale)
        return run

    def fa4(self):
        """FlashAttention 4 (flash-attn-4, CuTe DSL), which takes (B, N, H,
        D) tensors: views of ours. Its wheels are not torch's: install them
        into a folder named by $FLASHMLIR_BENCH_SITE (pip --target; the
        package adds itself through a .pth file, which site.addsitedir
        reads). If it does not import, every call reports why."""
        site_dir = os.environ.get("FLASHMLIR_BENCH_SITE")
        try:
            if site_dir:
                import site
                site.addsitedir(site_dir)
            from flash_attn.cute.interface import flash_attn_func
        except Exception as e:  # absent: recorded per shape, not fatal
            error = e

            def absent(q, k, v):
                raise RuntimeError("FA4 does not import: %s: %s"
                                   % (type(error).__name__, error))
            return absent

        def run(q, k, v):
            o = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2),
                                v.transpose(1, 2), causal=self.causal)
            o = o[0] if isinstance(o, tuple) else o
            return o.transpose(1, 2)
        return run

    def get(self, name, n):
        from torch.nn.attention import SDPBackend
        import flashmlir
        if name == "flashmlir":
            # The default scale is self.scale; passing it would make another
            # config (and miss the kernels --precompile put in the cache).
            # A kernel for the shape unless --runtime-shapes: the default
            # ("auto") would take the runtime-shapes kernel from a problem's
            # second length on.
            return lambda q, k, v: flashmlir.attention(
                q, k, v, causal=self.causal,
                runtime_shapes=self.runtime_shapes)
        if name == "flex":
            return self.flex(n)
        if name == "fa4":
            return self.fa4()
        backend = {"cudnn": SDPBackend.CUDNN_ATTENTION,
                   "flash": SDPBackend.FLASH_ATTENTION,
                   "mem-efficient": SDPBackend.EFFICIENT_ATTENTION}[name]
        return self.sdpa(backend)


def check_flashmlir(torch, shape, q, k, v, do, ref, runtime_shapes=False):
    """Our kernels on NaN-poisoned outputs, through the kernel API (the
    caching allocator could otherwise hand back a buffer that already holds
    a right answer); errors of the first head against the fp64 reference."""
    import flashmlir
    cfg = config_of(shape)
    o_ref, (dq_ref, dk_ref, dv_ref) = ref
    nan = float("nan")
    fwd = flashmlir.compile(dataclasses.replace(
        cfg, runtime_shapes=runtime_shapes))
    o = torch.full_like(q, nan)
    lse = torch.full(q.shape[:3], nan, dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream().cuda_stream
    fwd.forward(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                lse.data_ptr(), stream=stream,
                shape=(q.shape[0], q.shape[2], k.shape[2]))
    errs = {"fwd": rel_l2(o[0, 0], o_ref),
            "fwd_all_written": bool(o.isfinite().all())}
    bwd = flashmlir.compile(cfg, backward=True)
    dq, dk, dv = (torch.full_like(t, nan) for t in (q, k, v))
    ws = torch.full((max(bwd.workspace_bytes(), 1),), 0xFF, dtype=torch.uint8,
                    device=q.device)
    bwd.backward_launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                        do.data_ptr(), lse.data_ptr(), dq.data_ptr(),
                        dk.data_ptr(), dv.data_ptr(), ws.data_ptr(),
                        stream=stream)
    torch.cuda.synchronize()
    errs["bwd"] = max(rel_l2(dq[0, 0], dq_ref), rel_l2(dk[0, 0], dk_ref),
                      rel_l2(dv[0, 0], dv_ref))
    errs["bwd_all_written"] = all(bool(t.isfinite().all())
                                  for t in (dq, dk, dv))
    errs["cache_hit"] = fwd.cache_hit and bwd.cache_hit
    return errs


def time_one(torch, do_bench, fn, q, k, v, do, direction, warmup, rep):
    """Median milliseconds of the forward call, or of the backward of one
    forward's output; and the first head's outputs for the check."""
    if direction == "fwd":
        with torch.no_grad():
            o = fn(q, k, v)
            ms = do_bench(lambda: fn(q, k, v), warmup=warmup, rep=rep,
                          return_mode="median")
        return ms, (o[0, 0],)
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    o = fn(qg, kg, vg)
    grads = torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)
    ms = do_bench(lambda: torch.autograd.grad(o, (qg, kg, vg), do,
                                              retain_graph=True),
                  warmup=warmup, rep=rep, return_mode="median")
    return ms, tuple(g[0, 0] for g in grads)


def run_shape(torch, do_bench, args, shape):
    b, h, n, d, causal = shape
    scale = 1.0 / math.sqrt(d)
    gen = torch.Generator(device="cuda").manual_seed(args.seed + n * 7 + d)
    q, k, v, do = (torch.randn(b, h, n, d, device="cuda", generator=gen,
                               dtype=torch.bfloat16) for _ in range(4))
    ref = reference_head(q, k, v, do, causal, scale)
    row = {"batch": b, "heads": h, "seqlen": n, "hdim": d, "causal": causal,
           "check": check_flashmlir(torch, shape, q, k, v, do, ref,
                                    args.runtime_shapes),
           "fwd": {}, "bwd": {}}
    peers = Peers(torch, causal, scale, args.runtime_shapes)
    for name in args.impls:
        fn = peers.get(name, n)
        for direction in args.directions:
            entry = {"tflops": None}
            try:
                ms, outs = time_one(torch, do_bench, fn, q, k, v, do,
                                    direction, args.warmup, args.rep)
                wants = (ref[0],) if direction == "fwd" else ref[1]
                entry = {"ms": ms,
                         "tflops": flops(shape, direction) / (ms * 1e-3) / 1e12,
                         "rel_err": max(rel_l2(o, w)
                                        for o, w in zip(outs, wants))}
            except Exception as e:  # a backend may not take a shape
                entry["error"] = "%s: %s" % (type(e).__name__,
                                             str(e).splitlines()[0][:200]
                                             if str(e) else "")
            row[direction][name] = entry
    return row


def check_ok(row, args):
    c = row["check"]
    ok = c["fwd_all_written"] and c["fwd"] < args.tolerance
    if "bwd" in args.directions:
        ok = ok and c["bwd_all_written"] and c["bwd"] < args.tolerance
    return ok


def print_row(row, args):
    for direction in args.directions:
        cells = row[direction]
        base = cells.get("cudnn", {}).get("tflops")
        parts = []
        for name in args.impls:
            t = cells.get(name, {}).get("tflops")
            parts.append("%7.1f" % t if t else "    n/a")
        ours = cells.get("flashmlir", {}).get("tflops")
        ratio = "%5.2f" % (ours / base) if ours and base else "  n/a"
        err = row["check"][direction]
        print("%s d%-3d %-6s N=%-5d %s  x_cudnn=%s  err=%.1e%s"
              % (direction, row["hdim"], "causal" if row["causal"] else "",
                 row["seqlen"], " ".join(parts), ratio, err,
                 "" if check_ok(row, args) else "  FAIL"), flush=True)


def plot(rows, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(direction, causal) for direction in args.directions
              for causal in args.causal]
    fig, axes = plt.subplots(len(panels), len(args.hdims), squeeze=False,
                             figsize=(4.2 * len(args.hdims),
                                      3.2 * len(panels)))
    for i, (direction, causal) in enumerate(panels):
        for j, hdim in enumerate(args.hdims):
            ax = axes[i][j]
            sel = [r for r in rows if r["hdim"] == hdim and
                   r["causal"] == causal]
            for name in args.impls:
                pts = [(r["seqlen"], r[direction][name]["tflops"]) for r in sel
                       if r[direction].get(name, {}).get("tflops")]
                if pts:
                    xs, ys = zip(*pts)
                    ax.plot(xs, ys, marker="o", label=LABELS[name],
                            linewidth=2.5 if name == "flashmlir" else 1.2)
            ax.set_xscale("log", base=2)
            ax.set_xticks(args.seqlens)
            ax.set_xticklabels(["%dk" % (n // 1024) if n >= 1024 else str(n)
                                for n in args.seqlens])
            ax.set_ylim(bottom=0)
            ax.set_title("%s hdim %d%s" % ("forward" if direction == "fwd"
                                           else "backward", hdim,
                                           ", causal" if causal else ""),
                         fontsize=10)
            ax.set_xlabel("sequence length")
            ax.set_ylabel("TFLOP/s")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("%s, bf16, 16k tokens, hidden 2048" % args.device_name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run_gpu(args, todo, argv=None):
    import torch
    from triton.testing import do_bench
    import flashmlir  # noqa: F401  (attention needs torch first)
    import torch._dynamo
    import torch._functorch.config
    torch._dynamo.config.cache_size_limit = 256
    # The backward is timed by repeating autograd.grad on one graph
    # (retain_graph=True), which compiled graphs with donated buffers refuse.
    torch._functorch.config.donated_buffer = False
    args.device_name = torch.cuda.get_device_name()
    print("flashmlir %s (%s); torch %s; %s"
          % (compiler_version(), flashmlir.library_path(), torch.__version__,
             args.device_name), flush=True)
    print("dir  hdim        N      " +
          " ".join("%7s" % n[:7] for n in args.impls) + "  (TFLOP/s)",
          flush=True)
    stamp = datetime.date.today().isoformat()
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "bench-%s-%s" % (args.tag, stamp))
    rows = []
    result = {"command": " ".join(["python -m flashmlir.bench"] +
                                  (sys.argv[1:] if argv is None else argv)),
              "date": stamp, "device": args.device_name,
              "torch": torch.__version__,
              "flashmlir": compiler_version(), "dtype": "bf16",
              "tokens": TOKENS, "hidden": HIDDEN,
              "timing": "triton.testing.do_bench median, warmup %g ms, rep %g"
                        " ms" % (args.warmup, args.rep),
              "rows": rows}
    t0 = time.time()
    for shape in todo:
        rows.append(run_shape(torch, do_bench, args, shape))
        rows[-1]["elapsed_s"] = round(time.time() - t0, 1)
        print_row(rows[-1], args)
        # Rewritten after every shape: a run cut short keeps what it did.
        result["seconds"] = rows[-1]["elapsed_s"]
        with open(base + ".json", "w") as f:
            json.dump(result, f, indent=1)
    failed = [r for r in rows if not check_ok(r, args)]
    print("wrote", base + ".json")
    try:
        plot(rows, args, base + ".png")
        print("wrote", base + ".png")
    except ImportError as e:
        print("no plot (%s)" % e)
    summary(rows, args)
    print("check: %d/%d shapes passed (tolerance %g)"
          % (len(rows) - len(failed), len(rows), args.tolerance))
    return 1 if failed else 0


def summary(rows, args):
    """Geometric means of FlashMLIR over each peer, per direction."""
    for direction in args.directions:
        parts = []
        for name in args.impls:
            if name == "flashmlir":
                continue
            ratios = [r[direction]["flashmlir"]["tflops"] /
                      r[direction][name]["tflops"] for r in rows
                      if r[direction].get(name, {}).get("tflops") and
                      r[direction].get("flashmlir", {}).get("tflops")]
            if ratios:
                g = math.exp(sum(map(math.log, ratios)) / len(ratios))
                parts.append("x_%s=%.2f" % (name, g))
        print("geomean %s: %s" % (direction, " ".join(parts)))


def markdown(result):
    """The tables of a JSON result, as Markdown (for docs/perf)."""
    rows = result["rows"]
    impls = [n for n in IMPLS if any(n in r[d] for r in rows
                                     for d in ("fwd", "bwd"))]
    lines = []
    for direction in ("fwd", "bwd"):
        if not any(r[direction] for r in rows):
            continue
        lines.append("%s, TFLOP/s (%s):" % (
            "Forward" if direction == "fwd" else
            "Backward (%.1f x forward FLOPs)" % BWD_FLOP_FACTOR,
            result["timing"]))
        lines.append("")
        # Ratios to the peers that ran: cuDNN, FA2 and FA4 where present.
        ratios = [p for p in ("cudnn", "flash", "fa4") if p in impls]
        lines.append("| D | N | B×H | causal | " +
                     " | ".join(LABELS[n] for n in impls) + " | " +
                     " | ".join("×" + RATIO_LABELS[p] for p in ratios) + " |")
        lines.append("|" + "---|" * (len(impls) + 4 + len(ratios)))
        for r in rows:
            cells = r[direction]
            t = {n: cells.get(n, {}).get("tflops") for n in impls}
            ratio = lambda peer: ("%.2f" % (t["flashmlir"] / t[peer])
                                  if t.get(peer) and t["flashmlir"] else "n/a")
            lines.append("| %d | %d | %d×%d | %s | %s | %s |" % (
                r["hdim"], r["seqlen"], r["batch"], r["heads"],
                "yes" if r["causal"] else "no",
                " | ".join("%.1f" % t[n] if t[n] else "n/a" for n in impls),
                " | ".join(ratio(p) for p in ratios)))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m flashmlir.bench",
                                 description=__doc__.splitlines()[0])
    ints = lambda s: [int(x) for x in s.split(",") if x]
    ap.add_argument("--hdims", type=ints, default=[64, 128, 256])
    ap.add_argument("--seqlens", type=ints,
                    default=[512, 1024, 2048, 4096, 8192, 16384])
    ap.add_argument("--causal", choices=["both", "yes", "no"], default="both")
    ap.add_argument("--directions", default="fwd,bwd",
                    type=lambda s: [x for x in s.split(",") if x])
    ap.add_argument("--peers", default="cudnn,flash,mem-efficient,flex",
                    type=lambda s: [x for x in s.split(",") if x])
    ap.add_argument("--out", default=os.path.join("docs", "perf"))
    ap.add_argument("--tag", default="h200")
    ap.add_argument("--warmup", type=float, default=25)
    ap.add_argument("--rep", type=float, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=2e-2,
                    help="bound on ||out-ref||/||ref|| (bf16)")
    ap.add_argument("--markdown", metavar="JSON",
                    help="print a result file's tables as Markdown and exit")
    ap.add_argument("--runtime-shapes", action="store_true",
                    help="our forward on its runtime-shapes kernel (one for "
                         "every length) instead of one built for each shape")
    ap.add_argument("--varlen", action="store_true",
                    help="packed sequences (flashmlir.varlen_attention, "
                         "equal and mixed lengths) against the dense batch "
                         "of the same tokens")
    ap.add_argument("--precompile", action="store_true",
                    help="only fill the kernel cache (no GPU needed)")
    ap.add_argument("--chip", default="sm_90", help="with --precompile")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="with --precompile")
    args = ap.parse_args(argv)
    if args.markdown:
        with open(args.markdown) as f:
            print(markdown(json.load(f)))
        return 0
    for d in args.directions:
        if d not in ("fwd", "bwd"):
            ap.error("--directions takes fwd and/or bwd, got %r" % d)
    for p in args.peers:
        if p not in IMPLS[1:]:
            ap.error("unknown peer %r (choose from %s)"
                     % (p, ",".join(IMPLS[1:])))
    for d in args.hdims:
        if d <= 0 or HIDDEN % d:
            ap.error("hdim %d does not divide the hidden size %d"
                     % (d, HIDDEN))
    for n in args.seqlens:
        if n <= 0 or TOKENS % n:
            ap.error("seqlen %d does not divide %d tokens" % (n, TOKENS))
    args.causal = {"both": [False, True], "yes": [True],
                   "no": [False]}[args.causal]
    args.impls = ["flashmlir"] + args.peers
    if args.varlen:
        from . import bench_varlen
        return bench_varlen.run(args)
    todo = shapes(args.hdims, args.seqlens, args.causal)
    if args.precompile:
        return precompile_all(args, todo)
    return run_gpu(args, todo, argv)


if __name__ == "__main__":
    sys.exit(main())
