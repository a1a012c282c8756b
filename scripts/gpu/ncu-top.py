"""Condenses an ncu source page (CSV, `ncu -i R --page source --csv
--print-source sass`) to the instructions with the most stall samples and
the kernel's stall reasons summed over all instructions.

    python3 scripts/gpu/ncu-top.py SOURCE.csv [TOP]
"""
import csv
import sys
from collections import defaultdict


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    # The page opens with a "Kernel Name" line before the header.
    lines = [l for l in open(sys.argv[1])
             if l.startswith('"') and not l.startswith('"Kernel Name"')]
    rows = list(csv.DictReader(lines))
    if not rows:
        print("no rows")
        return
    samples = next(c for c in rows[0] if c.startswith("Warp Stall Sampling (All"))
    reasons = [c for c in rows[0] if c.startswith("stall_") and "(Not" not in c]
    total = sum(number(r[samples]) for r in rows)
    by_reason = defaultdict(float)
    for r in rows:
        for c in reasons:
            by_reason[c] += number(r[c])
    print(f"instructions {len(rows)}, stall samples {total:.0f}")
    for c, v in sorted(by_reason.items(), key=lambda kv: -kv[1])[:16]:
        print(f"  {c:60s} {v:10.0f}")
    source = next((c for c in rows[0] if c.lower().endswith("source")), None)
    address = next((c for c in rows[0] if "address" in c.lower()), None)
    for r in sorted(rows, key=lambda r: -number(r[samples]))[:top]:
        detail = sorted(((number(r[c]), c) for c in reasons), reverse=True)[:3]
        print(f"{r.get(address, '')} {number(r[samples]):8.0f} {r.get(source, '')[:60]:60s} "
              + " ".join(f"{c}={v:.0f}" for v, c in detail if v))


if __name__ == "__main__":
    main()
