#!/usr/bin/env python3
"""Fails when a source file includes from a layer above its own.

usage: scripts/check_layering.py [ROOT]   (default: the repository this script is in)

anvil's layers, lowest first: core/base -> kernels (the device runtime
interface, op tables, argument checks, then the two backends) -> core ->
nn -> distributed -> samples. A file may include its own layer and the ones
below, never one above, and one backend never reaches into the other's
folders. The ctest test `layering` runs this script.

Every #include "..." (and #include <...> of an anvil path) in the git tree's
.cpp/.h/.cu/.cuh files (tracked and untracked-but-not-ignored) is resolved as
the compiler resolves it: next to the including file first, then from the
source root and from include/. Includes that name no anvil file (third-party
headers) are skipped. A violation prints as

  nn/train/trainer.cpp:10 includes kernels/runtime.h: nn may include only core/base, core, nn
      (nn is built on core's Tensor API; device queries are core's too (...))

A file in a folder no row of LAYER_OF_PREFIX names fails too: a new folder
gets its rule when it is created.

A genuine need goes into EXCEPTIONS below with its reason; an exception that
no longer matches any include fails too, so the list stays short.
"""
import os
import re
import subprocess
import sys

CUDA_BACKEND = ("kernels/cuda", "kernels/cublas", "kernels/cudnn", "kernels/cusolver")

# Which layer a path belongs to: the first prefix that matches. "kernels/*.h"
# is a header directly in kernels/ (the runtime interface, the kernel
# registry, device queries), "kernels/*.cpp" a source there (the wiring that
# creates the backends).
LAYER_OF_PREFIX = [
    ("core/base/", "core/base"),
    ("core/", "core"),
    ("kernels/ops/", "kernels/ops"),
    ("kernels/shapes/", "kernels/shapes"),
    ("kernels/cpu/", "kernels/cpu"),
] + [(d + "/", "kernels/cuda backend") for d in CUDA_BACKEND] + [
    ("nn/", "nn"),
    ("distributed/", "distributed"),
    ("samples/", "samples"),
    ("include/anvil/", "include/anvil"),
    ("tests/", "tests"),
    ("bench/", "bench"),
    ("fuzz/", "fuzz"),
    ("shared/", "shared"),
]

ANYTHING = None
KERNEL_INTERFACE = ["core/base", "kernels/*.h", "kernels/ops", "kernels/shapes"]

# layer -> (the layers it may include, why). One line of reason each.
RULES = {
    "core/base": (["core/base"],
                  "the vocabulary every layer shares (errors, dtypes, devices, allocators) depends on nothing"),
    "kernels/*.h": (KERNEL_INTERFACE,
                    "the runtime interface and registry both backends implement must not know either backend"),
    "kernels/ops": (KERNEL_INTERFACE, "op tables and kernel signatures are shared by both backends"),
    "kernels/shapes": (KERNEL_INTERFACE, "argument checks and geometry are shared by both backends"),
    "kernels/*.cpp": (KERNEL_INTERFACE + ["kernels/*.cpp", "kernels/cpu", "kernels/cuda backend"],
                      "the wiring that creates the backends' runtimes (runtime.cpp) and asks the CUDA runtime "
                      "about devices (cuda_info.cpp): the one place that knows both backends"),
    "kernels/cpu": (KERNEL_INTERFACE + ["kernels/cpu"], "the CPU backend never depends on the CUDA backend"),
    "kernels/cuda backend": (KERNEL_INTERFACE + ["kernels/cuda backend"],
                             "kernels/cuda, cublas, cudnn and cusolver are one backend; it never reaches into "
                             "the CPU backend's internals"),
    "core": (["core/base", "core", "kernels/*.h", "kernels/ops", "kernels/shapes"],
             "Tensor, ops and autograd reach devices through the runtime interface and registry, never a "
             "backend's internals"),
    "nn": (["core/base", "core", "nn"],
           "nn is built on core's Tensor API; device queries are core's too (core/cuda.h, core/cpu_info.h)"),
    "distributed": (["core/base", "core", "nn", "distributed"],
                    "distributed is built on core and nn; device queries and streams come from core"),
    "samples": (["include/anvil", "core/base", "core", "nn", "distributed", "samples"],
                "samples are programs a user could write: the public API only"),
    "include/anvil": (["core/base", "core", "nn", "distributed"],
                      "the umbrella header publishes core, nn and distributed; kernels/ stays internal"),
    "tests": (ANYTHING, "tests check internals"),
    "bench": (ANYTHING, "benchmarks time internals"),
    "fuzz": (ANYTHING, "fuzzers drive internals"),
    "shared": (ANYTHING, "shared helpers of the tests and tools"),
}

# (including file, included file) -> why it is allowed anyway. Keep it short:
# each entry is a layering debt or a genuine need, said in one line.
EXCEPTIONS = {}

SOURCE_SUFFIXES = (".cpp", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')
# The tree's top folders; an angle-bracket include is anvil's when it starts
# with one of these or with anvil/ (<anvil/anvil.h>, from include/).
TREE_ROOTS = ("core/", "kernels/", "nn/", "distributed/", "samples/", "include/", "tests/", "bench/", "fuzz/",
              "shared/")
ANGLE_ROOTS = TREE_ROOTS + ("anvil/",)


def layer_of(path):
    for prefix, layer in LAYER_OF_PREFIX:
        if path.startswith(prefix):
            return layer
    if path.startswith("kernels/") and path.count("/") == 1:
        return "kernels/*.cpp" if path.endswith((".cpp", ".cu")) else "kernels/*.h"
    return None


def source_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (a source tarball): walk it
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
    return sorted(f for f in files if f.endswith(SOURCE_SUFFIXES) and os.path.isfile(os.path.join(root, f)))


def resolve(root, includer, name, quoted):
    """The anvil file `name` names, relative to root, or None for a third-party header."""
    candidates = [os.path.join(os.path.dirname(includer), name)] if quoted else []
    candidates += [name, os.path.join("include", name)]
    for c in candidates:
        c = os.path.normpath(c)
        if not c.startswith("..") and os.path.isfile(os.path.join(root, c)):
            return c
    # A path into the tree that does not exist (yet): classify it by its name,
    # so a stale include still reads as the layer it names.
    if quoted and name.startswith(TREE_ROOTS):
        return os.path.normpath(name)
    return None


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = {}  # layer -> [lines]
    used_exceptions = set()
    files = source_files(root)
    for rel in files:
        layer = layer_of(rel)
        if layer is None:
            problems.setdefault("(no layer)", []).append(
                f"{rel}: in no layer; add its folder to LAYER_OF_PREFIX and RULES in scripts/check_layering.py")
            continue
        allowed, reason = RULES[layer]
        if allowed is ANYTHING:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                quoted = m.group(1) is not None
                name = m.group(1) if quoted else m.group(2)
                if not quoted and not name.startswith(ANGLE_ROOTS):
                    continue  # <vector>, <cuda_runtime.h>, <nccl.h>
                target = resolve(root, rel, name, quoted)
                if target is None:
                    continue
                target_layer = layer_of(target)
                if target_layer in allowed or target == rel:
                    continue
                if (rel, target) in EXCEPTIONS:
                    used_exceptions.add((rel, target))
                    continue
                problems.setdefault(layer, []).append(
                    f"{rel}:{number} includes {target}: {layer} may include only {', '.join(allowed)}\n"
                    f"    ({reason})")
    for key in sorted(set(EXCEPTIONS) - used_exceptions):
        problems.setdefault("(stale exceptions)", []).append(
            f"{key[0]} no longer includes {key[1]}: remove its entry from EXCEPTIONS in scripts/check_layering.py")
    if not problems:
        print(f"layering: {len(files)} files, every include goes down the layers "
              f"({len(used_exceptions)} listed exception(s))")
        return 0
    total = 0
    for layer in sorted(problems):
        print(f"--- {layer}: {len(problems[layer])}")
        for p in problems[layer]:
            print(p)
        total += len(problems[layer])
    print(f"layering: {total} violation(s) in {len(files)} files. Move the code to the right layer, or go through a "
          f"lower layer's header (user-level device queries: core/cuda.h, core/cpu_info.h); the rules are the RULES "
          f"table in scripts/check_layering.py.")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
