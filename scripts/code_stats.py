#!/usr/bin/env python3
"""Lines of Rust per crate and the longest functions (issue 46's report).

    python3 scripts/code_stats.py [N]    # N longest functions (default 10)

A function's length is its lines from the `fn` line to its closing brace,
found by counting braces outside strings, chars and comments."""
import os
import re
import sys

CRATES = ["core", "native", "wasm", "threads", "tests"]
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")


def rust_files(root):
    for d, _, fs in os.walk(root):
        if "/target" in d or "node_modules" in d:
            continue
        for f in fs:
            if f.endswith(".rs"):
                yield os.path.join(d, f)


def braces(line):
    """Net brace count of a line, skipping strings, chars and // comments."""
    n, i, s = 0, 0, line
    while i < len(s):
        c = s[i]
        if s.startswith("//", i):
            break
        if c == '"':
            i += 1
            while i < len(s) and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
        elif c == "'" and i + 2 < len(s) and (s[i + 2] == "'" or (s[i + 1] == "\\" and "'" in s[i + 2:i + 5])):
            i = s.index("'", i + 2 if s[i + 1] != "\\" else i + 3)
        elif c == "{":
            n += 1
        elif c == "}":
            n -= 1
        i += 1
    return n


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, j, opened = 0, i, False
        while j < len(lines):
            b = braces(lines[j])
            if "{" in lines[j]:
                opened = True
            depth += b
            if opened and depth <= 0:
                break
            if not opened and lines[j].rstrip().endswith(";"):
                break
            j += 1
        if opened:
            yield m.group(6), i + 1, j - i + 1
        i += 1


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    fns = []
    print("| crate | lines in src/ | lines elsewhere (tests, examples) |")
    print("| --- | ---: | ---: |")
    for c in CRATES:
        src = other = 0
        for f in rust_files(c):
            n = sum(1 for _ in open(f, encoding="utf-8"))
            if f.startswith(os.path.join(c, "src")):
                src += n
                fns += [(length, f"{f}:{line}", name) for name, line, length in functions(f)]
            else:
                other += n
        print(f"| {c} | {src} | {other} |")
    print(f"\n| longest functions (src/) | lines |\n| --- | ---: |")
    for length, at, name in sorted(fns, reverse=True)[:top]:
        print(f"| `{name}` ({at}) | {length} |")


if __name__ == "__main__":
    main()
