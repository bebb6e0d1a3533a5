#!/usr/bin/python3
"""Where two slurmctld profiles differ: stock's and ours' perf.data from the same run (bench/
submit_rate.py --perf DIR or bench/scale.py --perf DIR, which record every thread with call
graphs).

Prints, per profile and the difference, the samples:
  - by thread (slurmctld names its threads: srvcn the RPC threads, sched_agent the main
    scheduler, bckfl backfill, sstate the state save, dbinx the slurmdbd agent; threads left
    unnamed, as job_submit/preempt's watcher, count as "slurmctld");
  - by the shared object the sample landed in;
  - in Slurm's victim searches (any sample with slurm_find_preemptable_jobs on its stack), by
    thread, and for the submissions' (srvcn) ones by the object and symbol they landed in;
  - outside backfill and the victim searches, by thread and landing symbol.
A stalled walk's samples land on the instruction that waits for the memory, which may be the
next list step rather than the callback that made the walk slower: compare whole walks (the
victim-search totals), not their parts. slurmctld's own static functions have no symbol in
Debian's stripped binary and show as [unknown].

  /usr/bin/python3 bench/perf_compare.py DIR/stock-blocks.perf.data DIR/ours-blocks.perf.data

Exit 2 when perf cannot read either file or one holds no samples."""
import argparse
import collections
import re
import subprocess
import sys

FRAME = re.compile(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
VICTIM_SEARCH = "slurm_find_preemptable_jobs"


def samples(path):
    """[(thread name, [(symbol, object file name), ...] leaf first)] of a perf.data file."""
    r = subprocess.run(["perf", "script", "-i", path, "-F", "comm,ip,sym,dso"], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"perf_compare: perf script -i {path} failed: {r.stderr.strip()[-300:]}")
    out, cur = [], None
    for line in r.stdout.splitlines():
        if not line.strip():
            if cur is not None:
                out.append(cur)
            cur = None
        elif not line[0].isspace():
            cur = (line.strip(), [])
        elif cur is not None and (m := FRAME.match(line)):
            cur[1].append((m.group(2).split("(")[0].strip(), m.group(3).rsplit("/", 1)[-1]))
    if cur is not None:
        out.append(cur)
    return out


def tally(profile):
    t = {k: collections.Counter() for k in ("thread", "object", "victim search, by thread",
                                             "submissions' victim search, by landing symbol",
                                             "outside backfill and victim searches")}
    for comm, frames in profile:
        leaf = f"{frames[0][1]}:{frames[0][0]}" if frames else "?"
        t["thread"][comm] += 1
        t["object"][frames[0][1] if frames else "?"] += 1
        if any(sym == VICTIM_SEARCH for sym, _ in frames):
            t["victim search, by thread"][comm] += 1
            if comm == "srvcn":
                t["submissions' victim search, by landing symbol"][leaf] += 1
        elif comm != "bckfl":
            t["outside backfill and victim searches"][f"{comm} {leaf}"] += 1
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first", help="perf.data of the reference (stock)")
    ap.add_argument("second", help="perf.data compared with it (ours)")
    ap.add_argument("--rows", type=int, default=20, help="rows per table (default 20)")
    a = ap.parse_args(argv)
    profiles = []
    for path in (a.first, a.second):
        try:
            p = samples(path)
        except SystemExit as e:
            print(e, file=sys.stderr)
            return 2
        if not p:
            print(f"perf_compare: {path} holds no samples", file=sys.stderr)
            return 2
        profiles.append(tally(p))
    first, second = profiles
    for key in first:
        x, y = first[key], second[key]
        print(f"{key} (samples: first, second, difference, ratio)")
        for k in sorted(set(x) | set(y), key=lambda k: -(x[k] + y[k]))[:a.rows]:
            ratio = f"{y[k] / x[k]:6.2f}" if x[k] else "     -"
            print(f"  {k[:72]:72} {x[k]:7} {y[k]:7} {y[k] - x[k]:+7} {ratio}")
        print(f"  {'all':72} {sum(x.values()):7} {sum(y.values()):7} {sum(y.values()) - sum(x.values()):+7}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
