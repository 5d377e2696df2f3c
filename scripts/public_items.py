#!/usr/bin/env python3
"""Count tern-core's public items (issue 46's measure), from rustdoc's JSON.

  scripts/public_items.py [--list]

Builds the JSON with nightly rustdoc into target/nightly-doc, then counts
the crate's own items rustdoc documents (structs, enums, traits, fns,
consts, statics, type aliases, macros, methods' owners — not modules nor
enum variants), split into the kernel authors' door (`backend::…`) and the
rest (the user API). --list prints each path.
"""
import json, os, subprocess, sys, collections

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.join(root, "target", "nightly-doc")
subprocess.run(["cargo", "+nightly", "rustdoc", "-q", "-p", "tern-llm-core", "--lib", "--target-dir", out,
                "--", "-Z", "unstable-options", "--output-format", "json"], cwd=root, check=True)
doc = json.load(open(os.path.join(out, "doc", "tern_core.json")))
items = []
for id_, p in doc["paths"].items():
    if p["crate_id"] != 0 or p["kind"] in ("module", "variant"):
        continue
    if id_ not in doc["index"]:
        continue
    items.append("::".join(p["path"][1:]))
items.sort()
by = collections.Counter("backend" if i.startswith("backend::") else "user" for i in items)
if "--list" in sys.argv:
    print("\n".join(items))
print(f"public items: {len(items)} (user API {by['user']}, backend {by['backend']})")
