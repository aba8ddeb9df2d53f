#!/usr/bin/env python3
"""Compares the entries two PTX files have in common, up to LLVM's numbering (basic-block labels,
call sequences, local depots) and comments: which are the same code, which differ, and which
only one file has. Used to check that a change leaves existing entries' code as it was.

    python3 scripts/ptx_compare.py OLD.ptx NEW.ptx
"""
import re
import sys


def entries(path):
    text = open(path).read()
    starts = sorted((m.start(), m.group(1)) for m in re.finditer(r"\.entry (\w+)\(", text))
    bodies = {}
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        body = text[start:end]
        for pattern, repl in [(r"BB\d+_", "BB_"), (r"callseq \d+", "callseq"), (r"__local_depot\d+", "__local_depot"), (r"\s*//.*", "")]:
            body = re.sub(pattern, repl, body)
        bodies[name] = body
    return bodies


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, new = entries(sys.argv[1]), entries(sys.argv[2])
    common = [n for n in old if n in new]
    differ = [n for n in common if old[n] != new[n]]
    print(f"{len(common) - len(differ)} of {len(common)} common entries are the same code")
    for n in differ:
        print(f"differs: {n}")
    for n in sorted(set(old) - set(new)):
        print(f"only in {sys.argv[1]}: {n}")
    extra = sorted(set(new) - set(old))
    if extra:
        print(f"only in {sys.argv[2]}: {len(extra)} entries ({', '.join(extra[:3])}{', ...' if len(extra) > 3 else ''})")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
