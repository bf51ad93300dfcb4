#!/usr/bin/env python3
"""Fails when an #include in lib/ or kernels/ breaks the layering rules of
doc/architecture.md ("Layering rules"). Each quoted include is resolved the
way the compiler does (the including file's folder, then kernels/, include/
and the source root) and the layer of the file it names is checked against
the layers the including layer may use.
  check_layering.py <source root>
"""
import os
import re
import sys

# layer -> the layers its files may include (a layer may include itself).
ALLOWED = {
    "kernels": set(),
    "base": {"kernels", "public"},
    "transport": {"base", "kernels", "public"},
    "algo": {"transport", "base", "kernels", "public"},
    "mc": {"base", "kernels", "public"},
    "core": {"mc", "algo", "transport", "base", "kernels", "public"},
    "api": {"core", "base", "kernels", "public"},
    "pmpi": {"public"},
    "torch": {"public"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "kernels":
        return "kernels"
    if rel[0] == "include":
        return "public"
    if rel[0] == "lib" and len(rel) > 2:
        return rel[1]
    return None


def resolve(root, including, name):
    for base in (os.path.dirname(including), os.path.join(root, "kernels"),
                 os.path.join(root, "include"), root):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(candidate):
            return candidate
    return None  # generated (bagua_config.h) or a system header


def violations(root):
    for top in ("lib", "kernels"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                path = os.path.join(folder, f)
                own = layer_of(root, path)
                if own is None or own not in ALLOWED:
                    if own is not None:
                        yield f"{path}: folder '{own}' has no layering rule"
                    continue
                with open(path, encoding="utf-8", errors="replace") as text:
                    for name in INCLUDE.findall(text.read()):
                        target = resolve(root, path, name)
                        layer = layer_of(root, target) if target else None
                        if layer is None or layer == own or layer in ALLOWED[own]:
                            continue
                        yield f"{os.path.relpath(path, root)}: includes \"{name}\" ({layer})"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = list(violations(root))
    for v in found:
        print("layering:", v)
    print(f"layering: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
