"""An experiment on compiled PTX, not a compiler path (docs/perf/README.md,
forty-first session): puts a block boundary, an opaque never-taken branch on
%dynamic_smem_size, before each P.V wait of the WGMMA forward (the
`wgmma.wait_group 0` that follows a `wait_group 1`), so that ptxas cannot
hoist that wait above the softmax.

    python3 scripts/gpu/pv-wait-region.py IN.ptx OUT.ptx

e.g. over a make-kernels.sh --bench directory, .meta files copied beside,
then scripts/gpu/ab-bench.py against the unedited one.
"""
import re
import sys


def main(src_path, out_path):
    out, fakes, armed = [], [], False
    for line in open(src_path).read().split("\n"):
        s = line.strip()
        if re.match(r"wgmma\.wait_group\.sync\.aligned\s+1;", s):
            armed = True
        elif armed and re.match(r"wgmma\.wait_group\.sync\.aligned\s+0;", s):
            n = len(fakes)
            out += ["\tmov.u32 %rfk0, %dynamic_smem_size;",
                    "\tsetp.eq.u32 %pfk, %rfk0, 12345;",
                    f"\t@%pfk bra $L__FAKE{n};", f"$L__BACK{n}:"]
            fakes.append([f"$L__FAKE{n}:", "\tmembar.cta;",
                          f"\tbra.uni $L__BACK{n};"])
            armed = False
        out.append(line)
    last = max(i for i, l in enumerate(out) if l.startswith("}"))
    out[last:last] = [l for fake in fakes for l in fake]
    text = re.sub(r"(\.reg \.b32 \t%r<\d+>;)",
                  r"\1\n\t.reg .b32 %rfk0;\n\t.reg .pred %pfk;",
                  "\n".join(out), count=1)
    open(out_path, "w").write(text)
    print(f"{src_path}: {len(fakes)} wait(s) after a block boundary")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
