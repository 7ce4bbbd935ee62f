#!/usr/bin/env python3
"""Fails when a measured figure in README.md has no results file behind it.

usage: scripts/check_readme_figures.py [ROOT]   (default: the repository this script is in)

Every row of README.md's "Status" table, every other paragraph of that
section, and every paragraph of its "Performance notes" section is a unit.
Each figure in a unit must appear in a file under bench/results/ that the
same unit cites by path (`bench/results/<name>.md`). A figure is a number
with a unit of measure attached:

  1.33x  0.92-0.97x  1-2%  25 MB  1.1 GB  80GB  437,035 tokens/s  3,946 GB/s
  40.8k (a count in thousands)  12 ms  48 s

Ranges ("0.95-1.57x") are checked number by number. A number counts as
present in a cited file when it appears there as a number (so README's
"1.09x" is found in a table cell "1.09"); thousands separators must match.
Sizes in binary units (4 KiB, 2 MiB, 1 GiB) are settings, not measurements,
and are not checked; nor are bare numbers (counts of tests, tolerances such
as 1e-5, versions, dates).

On failure it prints, for each figure it could not place, the unit (the
table row's first cell, or the paragraph's first words), the figure and the
files it looked in, and exits 1. The ctest test `readme_figures` runs it.
"""
import os
import re
import sys

NUMBER = r"\d[\d,]*(?:\.\d+)?"
# A unit attached to a number (or after one space). Order matters: longer first.
UNIT = (
    r"(?:x(?![\w])"  # 1.33x (not 0x7f, not x86)
    r"|%"
    r"|\s?[A-Za-z]+/s\b"  # GB/s, TFLOP/s, samples/s, tokens/s
    r"|\s?(?:ms|us|µs|ns)\b"
    r"|\s(?:s)\b"  # "48 s" (seconds; a bare "s" word after a space)
    r"|\s?(?:KB|kB|MB|GB|TB)\b"
    r"|k\b)"  # 40.8k
)
FIGURE = re.compile(
    r"(?<![\w.])(?P<first>" + NUMBER + r")"
    r"(?:\s?(?:-|–|to)\s?(?P<second>" + NUMBER + r"))?"
    r"(?P<unit>" + UNIT + r")"
)
CITATION = re.compile(r"bench/results/[A-Za-z0-9_.-]+\.md")
# Code spans and links' targets are not prose: `OMP_NUM_THREADS=2` is no figure.
CODE_SPAN = re.compile(r"`[^`]*`")


def sections(text):
    """{heading: [lines]} for the level-2 sections of a Markdown file."""
    out, current = {}, None
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            current = line[3:].strip()
            out[current] = []
            continue
        if current is not None:
            out[current].append(line)
    return out


def units(lines):
    """(label, text) per table row and per paragraph."""
    result, paragraph = [], []

    def flush():
        if paragraph:
            text = " ".join(paragraph)
            words = text.split()
            result.append(("paragraph '" + " ".join(words[:6]) + " ...'", text))
            paragraph.clear()

    in_fence = False
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
            flush()
            continue
        if in_fence:
            continue
        stripped = line.strip()
        if stripped.startswith("|"):
            flush()
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
                continue  # the separator row
            if cells and cells[0] in ("part", "option", "folder"):
                continue  # a header row
            name = cells[0] if len(cells[0]) <= 60 else cells[0][:57] + "..."
            result.append(("row '" + name + "'", stripped))
        elif not stripped:
            flush()
        else:
            paragraph.append(stripped)
    flush()
    return result


def figures(text):
    """The figures of a unit: (as written, [numbers])."""
    prose = CODE_SPAN.sub(lambda m: m.group(0) if CITATION.search(m.group(0)) else " ", text)
    found = []
    for m in FIGURE.finditer(prose):
        numbers = [m.group("first")] + ([m.group("second")] if m.group("second") else [])
        found.append((m.group(0).strip(), numbers))
    return found


def present(number, text):
    return re.search(r"(?<![\w.,])" + re.escape(number) + r"(?![\d]|,\d|\.\d)", text) is not None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    readme_path = os.path.join(root, "README.md")
    with open(readme_path, encoding="utf-8") as f:
        parts = sections(f.read())
    checked = [name for name in ("Status", "Performance notes") if name in parts]
    problems = []
    for name in ("Status", "Performance notes"):
        if name not in parts:
            problems.append(f"README.md has no '## {name}' section")
    count = 0
    for name in checked:
        for label, text in units(parts[name]):
            cited = sorted(set(CITATION.findall(text)))
            contents = {}
            for path in cited:
                full = os.path.join(root, path)
                if not os.path.isfile(full):
                    problems.append(f"{name}, {label}: cites {path}, which does not exist")
                    continue
                with open(full, encoding="utf-8") as f:
                    contents[path] = f.read()
            for written, numbers in figures(text):
                count += 1
                if not cited:
                    problems.append(f"{name}, {label}: figure '{written}' but the row cites no bench/results file")
                    continue
                for number in numbers:
                    if not any(present(number, body) for body in contents.values()):
                        problems.append(
                            f"{name}, {label}: figure '{written}' ({number}) is in none of {', '.join(cited)}")
    if problems:
        print("README.md figures without a results file behind them:")
        for p in problems:
            print("  " + p)
        print("Cite the bench/results file each figure comes from in the same row or paragraph, "
              "or correct the figure.")
        return 1
    print(f"readme_figures: {count} figures in README.md's {' and '.join(checked)} sections, each in a cited "
          "bench/results file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
