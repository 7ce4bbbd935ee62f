#!/usr/bin/env python3
"""Nsight Compute's CSV (scripts/gpu_check.sh's ncu stage) as a Markdown table,
one row per kernel launch, in the emulated GPU's terms (kernel_report), so the
two can be set side by side:

  ld sect/req, st sect/req   global load/store sectors per request (32-byte
                              sectors; 4 is a coalesced float32 warp access,
                              16 a coalesced float4 one)
  bank conflicts             shared-memory bank conflicts / wavefronts
  DRAM MB                    bytes read + written in device memory
  us, GB/s                   kernel duration under the profiler and DRAM bytes
                              over it (small launches are latency, not bandwidth)

usage: scripts/ncu_table.py GPU_CHECK_LOG > table.md
Lines of the log that are not ncu CSV rows are skipped.
"""
import csv
import re
import sys

METRICS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "ld_req",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "ld_sect",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "st_req",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "st_sect",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "bank_conflicts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "shared_wavefronts",
    "dram__bytes_read.sum": "dram_read",
    "dram__bytes_write.sum": "dram_write",
    "gpu__time_duration.sum": "ns",
}


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def short_kernel(name, width=70):
    """'void ns::kernel<T, ...>(args)' -> 'kernel<T, ...>' cut to width."""
    name = re.sub(r"^void\s+", "", name)
    name = re.sub(r"\(.*\)$", "", name)  # the argument list
    name = re.sub(r"\b(anvil::cuda::|dev::|ew_detail::|\(anonymous namespace\)::|unnamed>::)", "", name)
    return name if len(name) <= width else name[: width - 3] + "..."


def read_launches(lines):
    launches = {}  # ID -> {"kernel":..., metric: value}
    rows = csv.reader(line for line in lines if line.startswith('"'))
    header = None
    for row in rows:
        if row and row[0] == "ID":
            header = row
            continue
        if header is None or len(row) != len(header):
            continue
        record = dict(zip(header, row))
        key = METRICS.get(record.get("Metric Name", ""))
        if key is None:
            continue
        launch = launches.setdefault(record["ID"], {"kernel": record.get("Kernel Name", "?"),
                                                    "grid": record.get("Grid Size", ""),
                                                    "block": record.get("Block Size", "")})
        launch[key] = number(record.get("Metric Value", ""))
    return [launches[k] for k in sorted(launches, key=lambda k: int(k))]


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], errors="replace") as f:
        launches = read_launches(f.readlines())
    if not launches:
        print("(no ncu CSV rows in that log)")
        return 1
    print("| # | kernel | grid x block | ld sect/req | st sect/req | bank conflicts / wavefronts | DRAM MB | us | GB/s |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for i, l in enumerate(launches):
        dram = (l.get("dram_read") or 0) + (l.get("dram_write") or 0)
        ns = l.get("ns")
        gbps = f"{dram / ns:.0f}" if ns else "-"
        conflicts = l.get("bank_conflicts")
        wavefronts = l.get("shared_wavefronts")
        shared = "-" if not wavefronts else f"{conflicts:.0f} / {wavefronts:.0f}"
        print(f"| {i} | `{short_kernel(l['kernel'])}` | {l['grid']} x {l['block']} | "
              f"{ratio(l.get('ld_sect'), l.get('ld_req'))} | {ratio(l.get('st_sect'), l.get('st_req'))} | "
              f"{shared} | {dram / 1e6:.2f} | {ns / 1e3 if ns else 0:.1f} | {gbps} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
