#!/usr/bin/env python3
"""bench/textbook_easy.py: a plain textbook simulator, the yardstick of
issue 44 item 3 (`muster sim --policy easy|fcfs` at least 5 times faster in
CPU, the default policy at least 2 times).

    bench/textbook_easy.py TRACE.swf[.gz] [--policy easy|fcfs] [--limit N]

One event loop over a Standard Workload Format trace, a pool of the trace's
processors (no nodes), jobs in submission order (no priority), requested
times as limits rounded up to whole minutes as `muster sim` submits them.
EASY: the first job that does not fit gets a reservation at its shadow
time; later jobs start when they fit now and either end by the shadow time
or use only the processors left over then. Prints one line: jobs, mean
wait, the last end, CPU seconds.

The normalization is `sim::swf`'s: requested processors (field 8, else
field 5), requested time (field 9, else the run time, never below it), jobs
with no run time, no processors or wider than the machine dropped, submit
times shifted so the first is 0.
"""
import gzip
import heapq
import sys
import time


def read(path, limit):
    opener = gzip.open if path.endswith(".gz") else open
    max_nodes = max_procs = None
    raws = []
    with opener(path, "rt") as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if s.startswith(";"):
                key, _, val = s[1:].partition(":")
                key = key.strip()
                try:
                    v = int(val.split()[0]) if val.split() else -1
                except ValueError:
                    v = -1
                if key == "MaxNodes" and v > 0:
                    max_nodes = v
                elif key == "MaxProcs" and v > 0:
                    max_procs = v
                continue
            x = s.split()
            raws.append((int(x[0]), int(x[1]), int(x[3]), int(x[4]), int(x[7]), int(x[8])))
    widest = max(max(r[4] if r[4] > 0 else r[3] for r in raws), 1)
    if max_nodes and max_procs and max_procs >= max_nodes:
        total = (max_procs // max_nodes) * max_nodes
    elif max_procs:
        total = max_procs
    elif max_nodes:
        total = max_nodes
    else:
        total = widest
    jobs = []
    for jid, submit, run, alloc, req, req_time in raws:
        procs = req if req > 0 else alloc
        if run <= 0 or procs <= 0 or procs > total:
            continue
        limit_s = max(req_time if req_time > 0 else run, run)
        limit_s = max(1, -(-limit_s // 60)) * 60
        jobs.append((submit, jid, run, procs, limit_s))
    jobs.sort(key=lambda j: j[0])
    if limit:
        jobs = jobs[:limit]
    shift = jobs[0][0]
    return [(s - shift, jid, run, procs, lim) for s, jid, run, procs, lim in jobs], total


def simulate(jobs, total, easy):
    free = total
    running = []  # heap of (end, procs)
    expected = []  # (expected end, procs) of running jobs
    queue = []
    starts = {}
    i = 0
    n = len(jobs)
    t = 0
    while i < n or queue or running:
        nxt = []
        if i < n:
            nxt.append(jobs[i][0])
        if running:
            nxt.append(running[0][0])
        if not nxt:
            break
        t = min(nxt)
        while running and running[0][0] == t:
            end, procs, key = heapq.heappop(running)
            free += procs
            expected.remove(key)
        while i < n and jobs[i][0] == t:
            queue.append(jobs[i])
            i += 1
        # The pass.
        k = 0
        while k < len(queue):
            submit, jid, run, procs, lim = queue[k]
            if procs <= free:
                free -= procs
                starts[jid] = t
                key = (t + lim, procs, jid)
                expected.append(key)
                heapq.heappush(running, (t + run, procs, key))
                queue.pop(k)
                continue
            if not easy:
                break
            # Shadow time and extra processors for the head job.
            avail = free
            shadow = None
            for e, p, _ in sorted(expected):
                if shadow is not None and e > shadow:
                    break
                avail += p
                if shadow is None and avail >= procs:
                    shadow = e
            extra = avail - procs
            j = k + 1
            while j < len(queue):
                s2, jid2, run2, procs2, lim2 = queue[j]
                if procs2 <= free and (t + lim2 <= shadow or procs2 <= extra):
                    if t + lim2 > shadow:
                        extra -= procs2
                    free -= procs2
                    starts[jid2] = t
                    key = (t + lim2, procs2, jid2)
                    expected.append(key)
                    heapq.heappush(running, (t + run2, procs2, key))
                    queue.pop(j)
                    continue
                j += 1
            break
    return starts


def main():
    args = sys.argv[1:]
    policy = "easy"
    limit = None
    path = None
    while args:
        a = args.pop(0)
        if a == "--policy":
            policy = args.pop(0)
        elif a == "--limit":
            limit = int(args.pop(0))
        else:
            path = a
    if path is None or policy not in ("easy", "fcfs"):
        sys.exit(__doc__)
    c0 = time.process_time()
    jobs, total = read(path, limit)
    starts = simulate(jobs, total, policy == "easy")
    cpu = time.process_time() - c0
    waits = [starts[jid] - submit for submit, jid, _, _, _ in jobs]
    last = max(starts[jid] + run for _, jid, run, _, _ in jobs)
    print(
        f"jobs {len(jobs)} procs {total} policy {policy} mean_wait {sum(waits) / len(waits):.1f} "
        f"last_end {last} cpu_s {cpu:.3f}"
    )


if __name__ == "__main__":
    main()
