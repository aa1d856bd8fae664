#!/usr/bin/env python3
"""Compare kapi's findings (kapi check --format json) with the benchmark's
reference matcher (scripts/oracle.py output), by (path, line, form) as the
bench's compare.py does, and list every difference with its source line.
usage: bench-compare.py ORACLE.txt KAPI.json BENCH_DIR [-v]"""
import collections, json, os, re, sys

oracle_txt, kapi_json, bench = sys.argv[1:4]
verbose = '-v' in sys.argv
O = collections.Counter()
for l in open(oracle_txt):
    m = re.match(r'(.*?):(\d+):\d+: .*instead of "(.*)"$', l)
    if m:
        O[(m.group(1), int(m.group(2)), m.group(3).lower())] += 1
doc = json.load(open(kapi_json))
K = collections.Counter((f['path'], f['line'], f['matched'].lower()) for f in doc['findings'])
inter = sum((K & O).values())
extra, missed = K - O, O - K
print(f"{'tool':10} {'findings':>8} {'=oracle':>8} {'extra':>7} {'missed':>7}  files")
print(f"{'oracle':10} {sum(O.values()):8} {sum(O.values()):8} {0:7} {0:7}  {len({x[0] for x in O})}")
print(f"{'kapi':10} {sum(K.values()):8} {inter:8} {sum(extra.values()):7} {sum(missed.values()):7}  {len({x[0] for x in K})}")
s = doc['summary']
print(f"kapi summary: files={s['files']} findings={s['findings']} failing={s['failing']} reporting={s['reporting']}")
if verbose:
    def show(title, c):
        print(f"\n{title}: {sum(c.values())}")
        for (p, ln, form), n in sorted(c.items()):
            try:
                line = open(os.path.join(bench, p), encoding='utf-8', errors='replace').read().split('\n')[ln - 1]
            except Exception:
                line = '?'
            print(f"  {p}:{ln}: {form!r} x{n}: {line.strip()[:160]}")
    show('kapi only (extra)', extra)
    show('oracle only (missed)', missed)
