# SPDX-License-Identifier: Apache-2.0
"""check.py CHECK ARGS...: one ground-truth check of a probe tool's output.

tools/gpu/probes.sh runs every app without probes (baseline) and under each
tool, then calls this with the logs (which hold the app's "GT" lines and the
tool's report) and the tool's --out file. Prints one line "PASS|FAIL name:
what was compared" and exits 0 or 1.
"""
import os
import re
import sys


def gt(log):
    """GT lines of a log: a list of (what, {key: value})."""
    out = []
    for line in open(log, errors="replace"):
        if not line.startswith("GT "):
            continue
        parts = line.split()
        kv = {}
        for p in parts[2:]:
            if "=" in p:
                k, v = p.split("=", 1)
                kv[k] = v
            else:
                kv[p] = True
        out.append((parts[1], kv))
    return out


def gt_one(log, what, kernel=None):
    for w, kv in gt(log):
        if w == what and (kernel is None or kv.get("kernel") == kernel):
            return kv
    raise SystemExit(f"FAIL: no 'GT {what}' line{' for ' + kernel if kernel else ''} in {log}")


def launches(log):
    return [kv for w, kv in gt(log) if w == "launch"]


def result(name, ok, what):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {what}")
    return 0 if ok else 1


def csv_rows(path):
    rows = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        rows.append(line.strip().split(","))
    return rows


def c_threadhist(name, log, out, mode):
    """warp: total == warps launched and every warp slot == launches of it;
    thread: total == threads launched."""
    ls = launches(log)
    threads = sum(int(l["threads"]) for l in ls)
    warps = sum(int(l["warps"]) for l in ls)
    head = open(out).readline().split()
    total = int(head[2])
    slots = {int(r[0]): int(r[1]) for r in csv_rows(out)}
    if mode == "thread":
        return result(name, total == threads,
                      f"threads exited {total}, launched {threads}")
    # Warp mode: with one launch per kernel, each global warp exits exactly once.
    times = max(int(l["times"]) for l in ls)
    per_warp = set(slots.values())
    ok = total == warps and (len(ls) > 1 or times > 1 or per_warp == {1})
    return result(name, ok, f"warps exited {total}, launched {warps}; per-warp counts {sorted(per_warp)[:5]}, {len(slots)} warps seen")


def c_memtrace(name, log, trace, kernel, bufs):
    """The simulator trace (text) holds exactly the app's access pattern.
    bufs: 'a:r,b:r,c:w' -> thread i reads a+4i, reads b+4i, writes c+4i;
    'a:r%7919' -> thread i reads element (7919 i) mod n of a; 's:w*2' ->
    thread i writes element 2i of s."""
    b = gt_one(log, "buffers", kernel)
    n = int(b["n"])
    elem = int(b["elem"])
    want = {}
    for spec in bufs.split(","):
        buf, rw = spec.split(":")
        mul, perm = 1, None
        if "%" in rw:
            rw, perm = rw.split("%")
        elif "*" in rw:
            rw, mul = rw.split("*")
        base = int(b[buf], 16)
        for i in range(n):
            k = i * int(perm) % n if perm else i * int(mul)
            key = (base + elem * k, rw)
            want[key] = want.get(key, 0) + 1
    got = {}
    for line in open(trace):
        p = line.split()
        if not p or p[0] != "access":
            continue
        key = (int(p[2], 0), p[3])
        got[key] = got.get(key, 0) + 1
    missing = sum(1 for k in want if got.get(k, 0) < want[k])
    extra = sum(1 for k in got if got[k] > want.get(k, 0))
    ok = got == want
    return result(name, ok, f"{sum(got.values())} accesses recorded, {sum(want.values())} expected; "
                  f"{missing} expected addresses missing, {extra} unexpected")


def c_retsnoop(name, log, out, kernel, slack_ns):
    """One exit per block, all within [first block start, last block end + slack]."""
    t = gt_one(log, "timer", kernel)
    lo, hi = int(t["start"]), int(t["end"])
    blocks = sum(int(l["blocks"]) for l in launches(log) if l["kernel"] == kernel)
    rows = [r for r in csv_rows(out) if kernel in r[0]]
    ts = [int(r[6]) for r in rows]
    seen = {(r[1], r[2], r[3]) for r in rows}
    inside = sum(1 for x in ts if lo <= x <= hi + slack_ns)
    over = max((x - hi for x in ts), default=0)
    ok = len(rows) == blocks and len(seen) == blocks and inside == len(ts)
    return result(name, ok, f"{len(rows)} exits for {blocks} blocks ({len(seen)} distinct); "
                  f"{inside} within the kernel's [start, end+{slack_ns}ns] "
                  f"(span {(hi - lo) / 1e3:.1f}us; latest exit {over / 1e3:+.1f}us after the last end)")


def c_launchlate(name, log, out, max_ns):
    total = sum(int(l["times"]) for l in launches(log))
    rows = csv_rows(out)
    lat = [int(r[3]) for r in rows]
    pos = sum(1 for x in lat if 0 < x < max_ns)
    lat.sort()
    med = lat[len(lat) // 2] if lat else 0
    ok = len(lat) == total and pos == len(lat)
    return result(name, ok, f"{len(lat)} launches paired of {total}; {pos} in (0, {max_ns / 1e6:.0f}ms); "
                  f"median {med / 1e3:.1f}us, max {(lat[-1] if lat else 0) / 1e3:.1f}us")


def c_smload(name, log, out):
    blocks = sum(int(l["blocks"]) for l in launches(log))
    rows = csv_rows(out)
    per = [int(r[1]) for r in rows]
    total = sum(per)
    imb = max(per) / (total / len(per)) if per else 0
    return result(name, total == blocks,
                  f"{total} blocks counted on {len(per)} SMs, {blocks} launched; imbalance {imb:.2f}")


def c_hashcount(name, log, mapname):
    """tests/bpf/probe_hashcount.bpf.o: the hash map gpuext trace shows
    ("hash NAME: [k]=v ...") holds key 0 = every block launched, and for each
    grid x size the blocks of the launches of that size, exactly."""
    want = {0: 0}
    for l in launches(log):
        blocks = int(l["blocks"])
        gx = int(l["grid"].split(",")[0])
        want[0] += blocks
        want[gx] = want.get(gx, 0) + blocks
    got = None
    for line in open(log, errors="replace"):
        if line.startswith(f"hash {mapname}:"):
            got = {int(k): int(v) for k, v in re.findall(r"\[(\d+)\]=(\d+)", line)}
    if got is None:
        return result(name, False, f"no 'hash {mapname}:' line in {log}")
    return result(name, got == want, f"blocks counted {dict(sorted(got.items()))}, launched {dict(sorted(want.items()))}")


def c_kerneldur(name, log, out, kernel):
    """Device-measured duration vs the app's cudaEvent time (which includes launch overhead)."""
    ev_ms = float(gt_one(log, "time", kernel)["ms"])
    rows = [r for r in csv_rows(out) if kernel in r[0]]
    if not rows:
        return result(name, False, f"no kernel run of {kernel} timed")
    runs, total = int(rows[0][1]), int(rows[0][2])
    dev_ms = total / runs / 1e6
    ok = runs >= 1 and 0 < dev_ms <= ev_ms * 1.05 + 0.02
    return result(name, ok, f"{runs} run(s), device {dev_ms:.4f} ms vs cudaEvent {ev_ms:.4f} ms")


def pci_key(bus):
    """A PCI address as nvidia-smi (8-digit domain) or CUDA (4-digit) writes it, comparable."""
    dom, b, df = bus.strip().lower().split(":")
    d, f = df.split(".")
    return (int(dom, 16), int(b, 16), int(d, 16), int(f, 16))


def smi_index(gpus_csv):
    """nvidia-smi --query-gpu=index,pci.bus_id,uuid: {PCI address: index}, {uuid: index}."""
    by_bus, by_uuid = {}, {}
    for line in open(gpus_csv):
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 3 and f[0].isdigit():
            by_bus[pci_key(f[1])] = int(f[0])
            by_uuid[f[2]] = int(f[0])
    return by_bus, by_uuid


def c_multigpu(name, log, out, gpus_csv):
    """kernelretsnoop on every GPU at once: per GPU (its number in nvidia-smi, found by the PCI
    address the app printed), one exit per block launched there (the GT device lines), every
    block index once: records tagged with the right GPU."""
    by_bus, _ = smi_index(gpus_csv)
    want = {by_bus[pci_key(kv["bus"])]: int(kv["blocks"]) for w, kv in gt(log) if w == "device"}
    rows = [r for r in csv_rows(out) if "mg_add" in r[0]]
    got, seen = {}, {}
    for r in rows:
        g = int(r[5])
        got[g] = got.get(g, 0) + 1
        seen.setdefault(g, set()).add((r[1], r[2], r[3]))
    ok = len(want) >= 2 and got == want and all(len(seen[g]) == want[g] for g in want)
    return result(name, ok, "exits per GPU " + ", ".join(
        f"gpu{g}: {got.get(g, 0)} of {want[g]} ({len(seen.get(g, ()))} distinct)" for g in sorted(want)))


def c_gpuid(name, log, out, gpus_csv, uuid, want=None):
    """An app given one GPU by CUDA_VISIBLE_DEVICES=UUID: every kernelretsnoop record carries
    that GPU's number in nvidia-smi (the system's, not the process's device 0), or WANT when
    the run was given a list of GPUs of its own (GPUEXT_NV_GPU_LIST), and the preload found
    the GPU in the list (no notice that its id is its device number)."""
    _, by_uuid = smi_index(gpus_csv)
    want = by_uuid[uuid] if want is None else int(want)
    gpus = {}
    for r in csv_rows(out):
        gpus[int(r[5])] = gpus.get(int(r[5]), 0) + 1
    notice = any("GPU id is its device number" in line for line in open(log, errors="replace"))
    ok = list(gpus) == [want] and not notice
    return result(name, ok, f"records per GPU id {gpus}, want all on {want} (of {uuid})"
                  f"{'; the preload said the id is the device number' if notice else ''}")


def c_same(name, base, traced):
    a = gt_one(base, "result")
    b = gt_one(traced, "result")
    ok = "ok" in a and "ok" in b and a.get("checksum") == b.get("checksum")
    return result(name, ok, f"result {'ok' if 'ok' in b else 'WRONG'}, checksum {b.get('checksum')} "
                  f"vs uninstrumented {a.get('checksum')}")


def c_l2policy(name, trace_dir):
    """The preload's report (nvprobe-PID.txt): the GPU gave an L2 policy and the
    probes' map atomics carry it (hal/nvidia/nv_maps.c, l2keep_setup)."""
    seen = []
    if not os.path.isdir(trace_dir):
        return result(name, False, f"no trace directory {trace_dir}")
    for f in sorted(os.listdir(trace_dir)):
        if f.startswith("nvprobe-") and f.endswith(".txt"):
            for line in open(os.path.join(trace_dir, f)):
                m = re.match(r"L2 policy 0x([0-9a-f]{16}): on (\d+) map atomics", line)
                if m:
                    seen.append((int(m.group(1), 16), int(m.group(2))))
    ok = bool(seen) and all(v != 0 and n >= 1 for v, n in seen)
    return result(name, ok, "policies (value, atomics) " +
                  (", ".join(f"0x{v:016x} on {n}" for v, n in seen) or "none reported"))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    c, a = argv[1], argv[2:]
    if c == "threadhist":
        return c_threadhist(*a)
    if c == "memtrace":
        return c_memtrace(*a)
    if c == "retsnoop":
        return c_retsnoop(a[0], a[1], a[2], a[3], int(a[4]))
    if c == "launchlate":
        return c_launchlate(a[0], a[1], a[2], int(a[3]))
    if c == "smload":
        return c_smload(*a)
    if c == "kerneldur":
        return c_kerneldur(*a)
    if c == "hashcount":
        return c_hashcount(*a)
    if c == "same":
        return c_same(*a)
    if c == "multigpu":
        return c_multigpu(*a)
    if c == "gpuid":
        return c_gpuid(*a)
    if c == "l2policy":
        return c_l2policy(*a)
    print(f"check.py: unknown check {c}")
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - a broken output file is a failed check
        print(f"FAIL {sys.argv[2] if len(sys.argv) > 2 else '?'}: {type(e).__name__}: {e}")
        sys.exit(1)
