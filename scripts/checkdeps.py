#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that includes in sink/ and backoff/ run only down the layers, or sideways
within one (Chromium's checkdeps, smaller). @ref LLP 0014#layers

Each layer folder sink/src/<layer>/ has a DEPS file (a few Python assignments):
  layer = "engine"
  include_rules = ["base", "io", "spool"]   # the layers below it that it may include
  public_headers = ["chunker.h", ...]        # the headers of sink/include/fwdsink it owns
  facade = "forward_sink.h"                  # optional: the public header of its class
  facade_implementers = ["x.cc"]             # optional: files that may include it anyway
backoff/ is the bottom layer: everything may include it, it includes nothing of ours.

Checked: every quoted #include in sink/src/**, sink/include/fwdsink/*.h and
backoff/**: "<layer>/x.h" (a private header), "fwdsink/x.h" (a public header, owned by
one layer) or a backoff/src helper. An include of a layer not in the includer's rules,
of a header no layer owns, or of a file that does not exist fails the check.

The façade: a layer's `facade` is the public header that names its class (the class is
the file name in CamelCase: forward_sink.h -> ForwardSink, spool.h -> Spool, driver.h ->
Driver). A file in sink/src/<layer>/ includes it only when it implements the class:
when it defines a member of the class, or of a type nested in it, at the start of a
line (`void Driver::Impl::SendAll(`, `struct ForwardSink::Impl {`, `Status Spool::Purge(`),
or when DEPS names it in `facade_implementers`. Every other file takes the narrow
headers of the contracts (options, results, deps, the cursor's types) and never the
class, so that the class stays a thin handle over them. @ref LLP 0014#layers

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


def facade_class(header):
    """forward_sink.h -> ForwardSink"""
    return "".join(part.capitalize() for part in header.removesuffix(".h").split("_"))


def defines_member(text, cls):
    """True when `text` defines, at the start of a line, a member of `cls` or of a type
    nested in it (a function, a constructor, a nested class or struct)."""
    return re.search(rf"^(?:[\w:<>,*& \t]*[ \t*&])?{cls}::[\w:~]+[ \t]*[({{]", text, re.M) is not None


def facade_problems(layers):
    problems = []
    for name, d in sorted(layers.items()):
        facade = d.get("facade")
        if facade is None:
            continue
        cls = facade_class(facade)
        if not re.search(rf"^class {cls}\b", (PUBLIC / facade).read_text(), re.M):
            problems.append(f"sink/src/{name}/DEPS: facade fwdsink/{facade} declares no class {cls}")
        listed = set(d.get("facade_implementers", []))
        for f in sorted(listed):
            if not (SRC / name / f).is_file():
                problems.append(f"sink/src/{name}/DEPS: facade_implementers names no file '{f}'")
        for path in sorted((SRC / name).glob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            text = path.read_text()
            if f"fwdsink/{facade}" not in INCLUDE.findall(text):
                continue
            if path.name in listed or defines_member(text, cls):
                continue
            problems.append(f"{path.relative_to(ROOT)}: includes fwdsink/{facade}, its own layer's "
                            f"façade, and implements no member of {cls} (include the contracts' "
                            f"headers, or name it in facade_implementers)")
    return problems


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
    for name, d in layers.items():
        facade = d.get("facade")
        if facade is not None and facade not in d["public_headers"]:
            problems.append(f"sink/src/{name}/DEPS: facade {facade} is not one of its public_headers")
            d.pop("facade")
    problems += facade_problems(layers)
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
