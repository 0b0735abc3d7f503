#!/usr/bin/env python3
"""An independent reference of HTA's breakdowns (trace_anchors.md §1), standard library only.

Usage: hta_reference.py TRACE_DIR [OUT.json]. Writes the temporal breakdown, the comm-comp
overlap, the kernel-type table and the rank-0 idle-time breakdown as JSON; the analyzer's tests
compare its numbers with these, exactly.
"""
import gzip
import json
import math
import os
import re
import sys

RANK_RE = re.compile(r'"rank":\s+(\d+)')
STEP_RE = re.compile(r"^ProfilerStep#(\d+)")
COMM_RE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEM_RE = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
NOT_COMP_RE = re.compile(
    r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)"
    r"|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)"
    r"|(^collective_subgraph_execution)")
KERNEL_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset", "mtia_ccp_events"}


def kernel_type(name):
    if COMM_RE.match(name):
        return "COMMUNICATION"
    if MEM_RE.match(name):
        return "MEMORY"
    if not NOT_COMP_RE.match(name):
        return "COMPUTATION"
    return "OTHER"


def np_round(x, d):
    if x is None or math.isnan(x):
        return None
    s = 10.0 ** d
    return round(x * s) / s


def coerce(v):
    if isinstance(v, bool):
        return -1
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if math.isfinite(v) else -1
    if isinstance(v, str):
        try:
            f = float(v.strip(" "))
        except ValueError:
            return -1
        return int(f) if math.isfinite(f) else -1
    return -1


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    rank = 0
    for line in text.splitlines():
        m = RANK_RE.search(line)
        if m:
            rank = int(m.group(1))
            break
    doc = json.loads(text)
    backend = str((doc.get("distributedInfo") or {}).get("backend", ""))
    events = doc["traceEvents"]
    fractional = any(not isinstance(e.get("ts"), int) or isinstance(e.get("ts"), bool) for e in events)
    rows = []
    for i, e in enumerate(events):
        if e.get("cat") is None or e.get("dur") is None or "ts" not in e or e.get("cat") == "Trace":
            continue
        ts, dur = float(e["ts"]), float(e["dur"])
        if fractional:
            end = math.floor(ts + dur)
            ts = float(math.ceil(ts))
            dur = end - ts
        args = e.get("args") or {}
        stream = coerce(args["stream"]) if "stream" in args else -1
        tid_stream = "stream" not in args and backend.startswith("mtia") \
            and e["cat"] in KERNEL_CATS and isinstance(e.get("tid"), int) and e["tid"] >= 0
        if tid_stream:
            stream = e["tid"]
        corr = coerce(args["correlation"]) if "correlation" in args else -1
        name = e.get("name") if isinstance(e.get("name"), str) else ""
        gpu = (stream >= 0 and corr >= 0) or name in ("Event Sync", "Context Sync")
        rows.append(dict(index=i, ts=ts, dur=dur, stream=stream, corr=corr, name=name,
                         cat=e["cat"], gpu=gpu, step=bool(STEP_RE.match(name)),
                         tid_stream=tid_stream))
    return rank, rows


def merge(intervals):
    groups = []
    for ts, end in sorted(intervals, key=lambda x: x[0]):
        if not groups or ts > groups[-1][1]:
            groups.append([ts, end])
        else:
            groups[-1][1] = max(groups[-1][1], end)
    return groups


def sweep(points):
    points.sort(key=lambda p: p[0])
    running, out = 0, []
    for i in range(len(points) - 1):
        running += points[i][1]
        out.append((running, points[i + 1][0] - points[i][0]))
    return out


def analyze(trace_dir):
    files = sorted(f for f in os.listdir(trace_dir)
                   if (f.endswith(".json") or f.endswith(".gz")) and
                   os.path.isfile(os.path.join(trace_dir, f)))
    traces = {}
    for f in files:
        rank, rows = load(os.path.join(trace_dir, f))
        traces[rank] = rows
    step_names = {r["name"] for rows in traces.values() for r in rows if r["step"]}
    filt = len(step_names) >= 2
    min_ts = min(r["ts"] for rows in traces.values() for r in rows)
    out = {"temporal_breakdown": [], "comm_comp_overlap": [], "kernel_type": [],
           "idle_time_breakdown": []}
    type_sums = {}
    for rank in sorted(traces):
        rows = traces[rank]
        launch = {}
        for r in rows:
            if not r["gpu"] and r["corr"] >= 0:
                launch[r["corr"]] = r["index"]
        if filt:
            cpu = [r for r in rows if not r["gpu"]]
            steps = [r["ts"] for r in cpu if r["step"]]
            last = max(steps) if steps else min(r["ts"] for r in cpu)
            kept_cpu = [r for r in cpu if r["ts"] < last]
            count = {}
            for r in kept_cpu:
                count[r["corr"]] = count.get(r["corr"], 0) + 1
            kept = []
            for r in rows:
                if r["gpu"]:
                    kept.extend([r] * count.get(r["corr"], 0))
            kept.extend(kept_cpu)
        else:
            kept = list(rows)
        kept = [dict(r, ts=r["ts"] - min_ts) for r in kept]
        gpu = [r for r in kept if r["stream"] != -1]
        if not gpu:
            continue
        for r in gpu:
            r["type"] = kernel_type(r["name"])
        ivs = lambda t: [(r["ts"], r["ts"] + r["dur"]) for r in gpu if t is None or r["type"] == t]
        # The temporal breakdown and the overlap see only rows with args.stream: an MTIA device
        # event whose stream is its tid counts in the kernel-type and idle-time tables only.
        ivs_args = lambda t: [(r["ts"], r["ts"] + r["dur"]) for r in gpu
                              if not r["tid_stream"] and (t is None or r["type"] == t)]
        if ivs_args(None):
            allm = merge(ivs_args(None))
            kt = allm[-1][1] - allm[0][0]
            idle = kt - (sum(g[1] for g in allm) - sum(g[0] for g in allm))
            comp = merge(ivs_args("COMPUTATION"))
            compute = sum(g[1] for g in comp) - sum(g[0] for g in comp)
            non = kt - compute - idle
            out["temporal_breakdown"].append({
                "rank": rank, "idle_time(us)": idle, "compute_time(us)": compute,
                "non_compute_time(us)": non, "kernel_time(us)": kt,
                "idle_time_pctg": np_round(100 * (idle / kt), 2),
                "compute_time_pctg": np_round(100 * (compute / kt), 2),
                "non_compute_time_pctg": np_round(100 * (non / kt), 2)})
            comm = merge(ivs_args("COMMUNICATION"))
            pts = [(g[0], 2) for g in comp] + [(g[1], -2) for g in comp]
            pts += [(g[0], 1) for g in comm] + [(g[1], -1) for g in comm]
            ov = sum(length for running, length in sweep(pts) if running == 3)
            clen = sum(g[1] - g[0] for g in comm)
            out["comm_comp_overlap"].append({
                "rank": rank, "comp_comm_overlap_pctg": np_round(100 * (ov / clen), 2) if comm else None})
        pts = []
        for bit, t in enumerate(("COMPUTATION", "COMMUNICATION", "MEMORY")):
            for g in merge(ivs(t)):
                pts += [(g[0], 1 << bit), (g[1], -(1 << bit))]
        by_running = {}
        for running, length in sweep(pts):
            if running > 0:
                by_running[running] = by_running.get(running, 0) + math.trunc(length)
        for running, s in by_running.items():
            label = " overlapping ".join(
                t for bit, t in enumerate(("COMPUTATION", "COMMUNICATION", "MEMORY")) if running & (1 << bit))
            type_sums[label] = type_sums.get(label, 0) + s
        if rank == 0:
            ts_of = {}
            for r in kept:
                ts_of.setdefault(r["index"], r["ts"])
            streams, by_stream = [], {}
            for r in kept:
                if r["stream"] == -1 or r["cat"] not in KERNEL_CATS:
                    continue
                if r["stream"] not in by_stream:
                    streams.append(r["stream"])
                    by_stream[r["stream"]] = []
                by_stream[r["stream"]].append(r)
            for s in streams:
                ks = sorted(by_stream[s], key=lambda r: r["ts"])
                sums, present = [0.0, 0.0, 0.0], [False, False, True]
                for a, b in zip(ks, ks[1:]):
                    prev_end = a["ts"] + a["dur"]
                    gap = b["ts"] - prev_end
                    tr = None
                    if b["gpu"] and b["corr"] >= 0:
                        tr = ts_of.get(launch.get(b["corr"], 0))
                    c = 0 if (tr is not None and tr > prev_end) else (1 if gap < 30 else 2)
                    sums[c] += gap
                    present[c] = True
                total = sum(sums[c] for c in range(3) if present[c])
                for c, nm in enumerate(("host_wait", "kernel_wait", "other")):
                    if present[c]:
                        ratio = sums[c] / total if total != 0 else float("nan")
                        out["idle_time_breakdown"].append({
                            "rank": rank, "stream": s, "idle_category": nm,
                            "idle_time": np_round(sums[c], 2), "idle_time_ratio": np_round(ratio, 2)})
    total = sum(type_sums[k] for k in sorted(type_sums))
    for label in sorted(type_sums):
        out["kernel_type"].append({"kernel_type": label, "sum": type_sums[label],
                                   "percentage": np_round((type_sums[label] / total) * 100, 1)})
    out["kernel_type"].sort(key=lambda r: -r["sum"])
    return out


if __name__ == "__main__":
    result = analyze(sys.argv[1])
    text = json.dumps(result, indent=1, sort_keys=True)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
