#!/usr/bin/env python3
# Reads cpu_vector_ab.sh's JSON files from a folder and prints the markdown table of
# bench/results/2026-11-26-cpu-vectorised.md: scalar and vector GB/s, their ratio, vector % of memcpy.
import json, sys, glob, statistics, re, collections
d = sys.argv[1]
res = collections.defaultdict(lambda: {'off': [], 'on': []})
mem = {'off': [], 'on': []}
ctx = None
for f in sorted(glob.glob(f'{d}/*.json')):
    mode = f.split('/')[-1].split('_')[0]
    j = json.load(open(f)); ctx = j['context']
    for b in j['benchmarks']:
        if b.get('run_type') != 'iteration': continue
        g = b['bytes_per_second'] / 1e9
        if b['name'].startswith('BM_memcpy'): mem[mode].append(g); continue
        res[b['name']][mode].append((g, f))
allmem = mem['off'] + mem['on']
print(f"2-thread memcpy of 16M floats (read + write bytes), measured in every process: {min(allmem):.1f}-{max(allmem):.1f} GB/s, median {statistics.median(allmem):.1f} ({len(allmem)} runs)\n")
print('| benchmark | scalar GB/s (range) | vector GB/s (range) | vector / scalar (medians) | vector, % of its run\'s memcpy (median) |')
print('|---|---|---|---|---|')
# memcpy per file, for the per-run percentage
memf = {}
for f in glob.glob(f'{d}/*.json'):
    for b in json.load(open(f))['benchmarks']:
        if b['name'].startswith('BM_memcpy') and b.get('run_type') == 'iteration': memf[f] = b['bytes_per_second'] / 1e9
for n, v in res.items():
    off = [g for g, _ in v['off']]; on = [g for g, _ in v['on']]
    pct = [100 * g / memf[f] for g, f in v['on']]
    short = re.sub(r'/(process_time|real_time)', '', n)
    print(f"| {short} | {statistics.median(off):.1f} ({min(off):.1f}-{max(off):.1f}) | {statistics.median(on):.1f} ({min(on):.1f}-{max(on):.1f}) | {statistics.median(on)/statistics.median(off):.2f}x | {statistics.median(pct):.0f}% |")
