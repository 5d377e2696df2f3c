#!/usr/bin/env python3
"""Count tern-core's public items (issue 46's measure), from rustdoc's JSON.

  scripts/public_items.py [--list]

Builds the JSON with nightly rustdoc into target/nightly-doc, then counts
the crate's own items rustdoc documents (structs, enums, traits, fns,
consts, statics, type aliases, macros, methods' owners — not modules nor
enum variants), split by door: the kernel authors' (`backend::…`), the
servers' and bindings' (`runtime::…`) and the rest (the user API, at the
root). --list prints each path.
"""
import json, os, subprocess, sys, collections

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.join(root, "target", "nightly-doc")
subprocess.run(["cargo", "+nightly", "rustdoc", "-q", "-p", "tern-llm-core", "--lib", "--target-dir", out,
                "--", "-Z", "unstable-options", "--output-format", "json"], cwd=root, check=True)
doc = json.load(open(os.path.join(out, "doc", "tern_core.json")))
index = doc["index"]


def walk(mod_id, path, seen, items):
    """Every item reachable from a public module, by the path it is reached by."""
    for i in index[str(mod_id)]["inner"]["module"]["items"]:
        it = index.get(str(i))
        if it is None:
            continue
        kind, inner = next(iter(it["inner"].items()))
        if kind == "use":
            target = inner.get("id")
            name = inner["name"]
            if inner.get("is_glob") or target is None or str(target) not in index:
                continue
            it = index[str(target)]
            kind, inner = next(iter(it["inner"].items()))
        else:
            name = it["name"]
        if (kind, name) in seen.setdefault(tuple(path), set()):
            continue
        seen[tuple(path)].add((kind, name))
        if kind == "module":
            walk(it["id"], path + [name], seen, items)
        elif kind != "variant":
            items.append("::".join(path + [name]))


items = []
walk(doc["root"], [], {}, items)
items.sort()
door = lambda i: i.split("::")[0] if i.split("::")[0] in ("backend", "runtime") else "user"
by = collections.Counter(door(i) for i in items)
if "--list" in sys.argv:
    print("\n".join(items))
print(f"public items: {len(items)} (user API {by['user']}, runtime {by['runtime']}, backend {by['backend']})")
