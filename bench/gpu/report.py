# SPDX-License-Identifier: Apache-2.0
"""report.py RESULTS "GPU, driver": the table of bench/gpu/run.sh.

Ratios are tool / uninstrumented (the first uninstrumented run of the
workload; 'noise' is the second one / the first; a workload run in
several rounds (all of them: bench/gpu/run.sh) reports each configuration's median round; 'jit-only' is the
control: the modules JIT-compiled from their PTX unchanged, no probes, so
tool / jit-only is the probes' own share). Targets (issue 6), against the
uninstrumented native run, what a user sees:
entry/exit tools <= 1.03 on realistic kernels and <= 1.2 on tiny ones,
memtrace <= 3 on memory-bound kernels, cached attach < 100 ms per module.
"""
import sys


def kv(line):
    d = {}
    for p in line.split():
        if "=" in p:
            k, v = p.split("=", 1)
            d[k] = v
    return d


def table(runs, works, tools, kind, bad):
    """One table: kind "gpu" (CUDA events) or "wall" (the host's time of a rep)."""
    if kind == "gpu":
        print("overhead = median time with the tool / without (CUDA events, after warm-up); "
              "tiny = per launch")
    else:
        print("\nwall = median host time of a rep with the tool / without: the launches, the "
              "kernels and the synchronize call, where the tool copies what its probes wrote")
    hdr = f"{'workload':<10} {'size':<42} {'reps':>4} {'base ms':>9} {'noise':>6} " + \
        " ".join(f"{t[:10]:>10}" for t in tools)
    print(hdr)
    for w in works:
        if kind == "gpu":
            key = "per" if w == "tiny" else "median_ms"
        else:
            key = "wall_median_ms"
        # Several rounds of one configuration: the round whose time is the median.
        by = {}
        for r in runs:
            if r.get("workload") == w:
                by.setdefault(r["config"], []).append(r)
        rs = {}
        for c, lst in by.items():
            ok = sorted((r for r in lst if key in r), key=lambda r: float(r[key]))
            rs[c] = ok[len(ok) // 2] if ok else lst[-1]
        b = rs.get("base")
        if not b or key not in b or float(b[key]) <= 0:
            print(f"{w:<10} (no baseline)")
            continue
        base = float(b[key])
        b2 = rs.get("base2")
        noise = float(b2[key]) / base if b2 and key in b2 else float("nan")
        cells = []
        for t in tools:
            r = rs.get(t)
            if not r:
                cells.append(f"{'-':>10}")
            elif "timeout" in r:
                cells.append(f"{'>' + r['timeout']:>10}")
                if kind == "gpu":
                    bad.append(f"{w}/{t}: over {r['timeout']} per run (ring-buffer bound)")
            elif key not in r or r.get("rc") != "0" or r.get("check") != "ok":
                cells.append(f"{'fail':>10}")
                if kind == "gpu":
                    bad.append(f"{w}/{t}: rc={r.get('rc')} check={r.get('check')}")
            else:
                ratio = float(r[key]) / base
                cells.append(f"{ratio:>9.3f}x")
                limit = 3.0 if t == "memtrace" else (1.2 if w == "tiny" else
                                                     (None if w.startswith("membound") else 1.03))
                if t == "jitonly":
                    limit = None
                if limit and ratio > limit:
                    bad.append(f"{w}/{t} ({kind}): {ratio:.3f}x > target {limit}x")
        unit = "us/launch" if w == "tiny" and kind == "gpu" else ""
        print(f"{w:<10} {b.get('size', ''):<42} {b.get('reps', ''):>4} {base:>9.4f} {noise:>5.3f}x "
              + " ".join(cells) + (f"  ({unit})" if unit else ""))


def main(path, gpu):
    runs = [kv(l) for l in open(path) if l.startswith("RUN ")]
    att = [kv(l) for l in open(path) if l.startswith("ATTACHRUN ")]
    works = []
    for r in runs:
        if r.get("workload") and r["workload"] not in works:
            works.append(r["workload"])
    tools = ["jitonly", "kernelretsnoop", "threadhist", "launchlate", "smload", "kerneldur",
             "memtrace"]
    print(f"GPU: {gpu}")
    bad = []
    for kind in ("gpu", "wall"):
        table(runs, works, tools, kind, bad)
    if att:
        print("\nattach latency, 128 kernels in one module (threadhist probes; ms of the app's "
              "first launches of every kernel, and of its whole run until then):")
        for a in att:
            print(f"  {a.get('config', '?'):<7} module_ms={a.get('module_ms', '?'):>9} "
                  f"total_ms={a.get('total_ms', '?'):>9}")
        bases = [float(a["total_ms"]) for a in att if a.get("config") == "base" and "total_ms" in a]
        cached = [float(a["total_ms"]) for a in att if a.get("config") == "cached" and "total_ms" in a]
        cold = [float(a["total_ms"]) for a in att if a.get("config") == "cold" and "total_ms" in a]
        if bases and cached:
            extra = min(cached) - min(bases)
            print(f"  attach cost per module: cold {min(cold) - min(bases) if cold else float('nan'):.1f} ms, "
                  f"cached {extra:.1f} ms (target < 100 ms)")
            if extra >= 100:
                bad.append(f"cached attach {extra:.1f} ms >= 100 ms")
    if bad:
        print("\nmissed targets / failures:")
        for b in bad:
            print("  " + b)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "?")
