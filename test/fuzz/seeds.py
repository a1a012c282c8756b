#!/usr/bin/env python3
"""Writes the project's own inputs as seeds for a fuzz target (test/fuzz/run.sh).

    seeds.py TARGET SOURCE_DIR OUT_DIR

MlirInputFuzzer: every .mlir file of examples/ and test/, one seed per
`// -----` split. CompileFlagsFuzzer: the arguments of each fa-compile RUN
line of the lit tests (test/Tools), one per line (`-o %t` as `-o out`,
input files left out). Other targets have their seeds in test/fuzz/corpus.
"""

import pathlib
import re
import shlex
import sys


def mlir_seeds(src):
    files = sorted((src / "examples").glob("*.mlir"))
    files += sorted((src / "test").rglob("*.mlir"))
    for path in files:
        text = path.read_text()
        for i, part in enumerate(re.split(r"^// -----.*$", text, flags=re.M)):
            if part.strip():
                yield f"{path.relative_to(src)}:{i}", part.encode()


def flag_seeds(src):
    for path in sorted((src / "test" / "Tools").glob("*.test")):
        for n, line in enumerate(path.read_text().splitlines()):
            match = re.search(r"RUN:.*?\bfa-compile\b(.*)", line)
            if not match:
                continue
            # The command ends at the first redirection, pipe or &&.
            command = re.split(r"\s(?:2>&1|\||&&|>|<)", match.group(1))[0]
            try:
                args = shlex.split(command)
            except ValueError:
                continue
            # -o %t becomes -o out; other substituted arguments (input
            # files) are left out.
            kept = []
            for arg in args:
                if "%" not in arg:
                    kept.append(arg)
                elif kept and kept[-1] == "-o":
                    kept.append("out")
            args = kept
            yield f"{path.name}:{n + 1}", "\n".join(args).encode()


def main():
    target, src, out = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    make = {"MlirInputFuzzer": mlir_seeds, "CompileFlagsFuzzer": flag_seeds}
    if target not in make:
        return
    out = pathlib.Path(out)
    for name, data in make[target](src):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        (out / f"project-{safe}").write_bytes(data)


if __name__ == "__main__":
    main()
