#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that includes in sink/ and backoff/ run only down the layers, or sideways
within one (Chromium's checkdeps, smaller). @ref LLP 0014#layers

Each layer folder sink/src/<layer>/ has a DEPS file (a few Python assignments):
  layer = "engine"
  include_rules = ["base", "io", "spool"]   # the layers below it that it may include
  public_headers = ["chunker.h", ...]        # the headers of sink/include/fwdsink it owns
backoff/ is the bottom layer: everything may include it, it includes nothing of ours.

Checked: every quoted #include in sink/src/**, sink/include/fwdsink/*.h and
backoff/**: "<layer>/x.h" (a private header), "fwdsink/x.h" (a public header, owned by
one layer) or a backoff/src helper. An include of a layer not in the includer's rules,
of a header no layer owns, or of a file that does not exist fails the check.

  scripts/checkdeps.py          check (exit 1 and one line per violation)
  scripts/checkdeps.py --graph  also print what each layer includes
"""
import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "sink" / "src"
PUBLIC = ROOT / "sink" / "include" / "fwdsink"
BACKOFF_PUBLIC = ROOT / "backoff" / "include" / "fwdsink"
BACKOFF_SRC = ROOT / "backoff" / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_deps(path):
    values = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            raise SystemExit(f"{path}: only NAME = literal lines are allowed")
        values[node.targets[0].id] = ast.literal_eval(node.value)
    for key in ("layer", "include_rules", "public_headers"):
        if key not in values:
            raise SystemExit(f"{path}: missing '{key}'")
    if values["layer"] != path.parent.name:
        raise SystemExit(f"{path}: layer '{values['layer']}' is not its folder's name")
    return values


def main(argv):
    layers = {"backoff": {"layer": "backoff", "include_rules": [], "public_headers": []}}
    owner = {f"fwdsink/{h.name}": "backoff" for h in BACKOFF_PUBLIC.glob("*.h")}
    for h in BACKOFF_SRC.glob("*.h"):
        owner[h.name] = "backoff"
    problems = []
    for deps in sorted(SRC.glob("*/DEPS")):
        d = read_deps(deps)
        layers[d["layer"]] = d
        for h in d["public_headers"]:
            key = f"fwdsink/{h}"
            if key in owner:
                problems.append(f"{deps}: fwdsink/{h} is owned by {owner[key]} too")
            owner[key] = d["layer"]
            if not (PUBLIC / h).is_file():
                problems.append(f"{deps}: public header fwdsink/{h} does not exist")
    for folder in sorted(p for p in SRC.iterdir() if p.is_dir()):
        if folder.name not in layers:
            problems.append(f"{folder}: a folder of sink/src without a DEPS file")
    for h in sorted(PUBLIC.glob("*.h")):
        if f"fwdsink/{h.name}" not in owner:
            problems.append(f"{h}: no layer's DEPS lists it in public_headers")
    for name in layers:
        for r in layers[name]["include_rules"]:
            if r not in layers:
                problems.append(f"sink/src/{name}/DEPS: include_rules names no layer '{r}'")

    files = [(f, f.parent.name) for f in SRC.glob("*/*") if f.suffix in (".h", ".cc")]
    for f in SRC.glob("*"):
        if f.is_file() and f.suffix in (".h", ".cc"):
            problems.append(f"{f}: a source outside every layer folder")
    files += [(h, owner.get(f"fwdsink/{h.name}")) for h in PUBLIC.glob("*.h")]
    files += [(f, "backoff") for f in (ROOT / "backoff").rglob("*") if f.suffix in (".h", ".cc")]
    graph = {}
    for path, layer in sorted(files):
        if layer is None or layer not in layers:
            continue
        allowed = {layer, "backoff", *layers[layer]["include_rules"]}
        for n, inc in enumerate(INCLUDE.findall(path.read_text())):
            if inc.startswith("fwdsink/"):
                target = owner.get(inc)
                if target is None:
                    problems.append(f"{path.relative_to(ROOT)}: includes {inc}, which no layer owns")
                    continue
            elif "/" in inc:
                target = inc.split("/", 1)[0]
                if target not in layers or not (SRC / inc).is_file():
                    problems.append(f"{path.relative_to(ROOT)}: includes \"{inc}\", not a header of a layer")
                    continue
            elif inc in owner:
                target = owner[inc]
            else:
                problems.append(f"{path.relative_to(ROOT)}: includes \"{inc}\" without its layer's folder")
                continue
            graph.setdefault(layer, set()).add(target)
            if target not in allowed:
                problems.append(f"{path.relative_to(ROOT)}: includes \"{inc}\": {layer} may not include "
                                f"{target} (sink/src/{layer}/DEPS allows {sorted(allowed)})")
    if "--graph" in argv:
        for layer in sorted(graph):
            print(f"{layer} -> {', '.join(sorted(graph[layer] - {layer}))}")
    for p in problems:
        print(f"checkdeps: {p}", file=sys.stderr)
    if problems:
        print(f"checkdeps: {len(problems)} problem(s); the layers are in LLP 0014#layers",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
