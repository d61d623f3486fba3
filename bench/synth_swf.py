#!/usr/bin/env python3
"""A synthetic Standard Workload Format trace for the scheduler benchmarks.

    bench/synth_swf.py [--nodes 10000] [--cpus 4] [--jobs 100000] [--seed 1] > synth.swf

Deterministic for a seed: NODES nodes of CPUS CPUs (header MaxNodes and
MaxProcs), JOBS jobs all submitted in the first minute (so they queue),
sizes mostly small with a tail of wide jobs, run times from a minute to a
day with user estimates two to ten times the run time.
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    procs = a.nodes * a.cpus
    print("; Version: 2.2")
    print("; Computer: synthetic (bench/synth_swf.py)")
    print(f"; MaxJobs: {a.jobs}")
    print(f"; MaxNodes: {a.nodes}")
    print(f"; MaxProcs: {procs}")
    print("; UnixStartTime: 1700000000")
    for i in range(1, a.jobs + 1):
        submit = (i - 1) * 60 // a.jobs
        r = rng.random()
        if r < 0.6:
            n = rng.randint(1, a.cpus)
        elif r < 0.9:
            n = a.cpus * rng.randint(1, 16)
        elif r < 0.99:
            n = a.cpus * rng.randint(16, 256)
        else:
            n = a.cpus * rng.randint(256, max(257, a.nodes // 4))
        n = min(n, procs)
        run = int(60 * 10 ** rng.uniform(0, 3.16))
        limit = int(run * rng.uniform(2, 10))
        user = rng.randint(1, 200)
        # id submit wait run alloc cpu mem req_procs req_time req_mem status uid gid exe queue part prev think
        print(f"{i} {submit} -1 {run} {n} -1 -1 {n} {limit} -1 1 {user} {user % 20 + 1} -1 1 1 -1 -1")


if __name__ == "__main__":
    main()
