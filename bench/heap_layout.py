#!/usr/bin/python3
"""Where a running slurmctld's job records and job_list's nodes sit in its memory (a diagnosis
for issue 15's sbatch gap after owner traffic, bench/submit_rate.py --layout).

Each submission's victim search (preempt.c slurm_find_preemptable_jobs) steps along every node
of job_list and reads a few fields of each job record: het_job_id, het_job_list and job_id
(bytes 328-367 of the 1048-byte record), job_state (408), and for a job its preempt plugin
lets through, qos_ptr (688) and resv_ptr (744). So a walk's cost is set by how many cache lines,
4 KiB pages and page-table lines those reads touch, and in what order. This reads the list out
of the process (/proc/PID/mem, as root; best with the process stopped) and counts them:

  pages          distinct 4 KiB pages the walk touches (nodes and the record lines read)
  pte_lines      distinct 64-byte lines of last-level page table entries (8 pages each)
  pmds           distinct 2 MiB regions (one page-table page each)
  mappings       which /proc/PID/maps regions hold the records (glibc's main heap, or a
                 thread arena: a 64 MiB mapping of its own), and how often two jobs next to
                 each other in the list sit in different ones (switches)
  same_page      consecutive nodes on one page; node_record_page: a node on its record's page

The offsets are Slurm 22.05.8's on x86_64 (checked with offsetof against the source tree's
slurmctld.h); each record's magic (0xf0b7392c) is checked before it is counted.

  /usr/bin/python3 bench/heap_layout.py PID [--binary PATH] [--json]
"""
import argparse
import bisect
import json
import os
import struct
import subprocess
import sys

JOB_MAGIC = 0xF0B7392C
# job_record_t (22.05.8, x86_64): byte offsets of the fields Slurm's victim search reads
# (het_job_id, job_state, qos_ptr, resv_ptr).
READS = (328, 408, 688, 744)
XLIST_HEAD, XLIST_COUNT = 8, 40  # struct xlist: magic, head, tail, iNext, fDel, count


class LayoutError(Exception):
    pass


def symbol_offset(binary, name):
    out = subprocess.run(["nm", "-D", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise LayoutError(f"{binary} exports no symbol {name}")


def mappings(pid):
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            maps.append((lo, hi, int(parts[2], 16), parts[5] if len(parts) > 5 else ""))
    return maps


def probe(pid, binary=None):
    binary = binary or os.readlink(f"/proc/{pid}/exe")
    maps = mappings(pid)
    base = next((lo - off for lo, _, off, path in maps if path == binary and off == 0), None)
    if base is None:
        raise LayoutError(f"process {pid} has no mapping of {binary}")
    starts = [m[0] for m in maps]

    def region(addr):
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or addr >= maps[i][1]:
            raise LayoutError(f"address {addr:#x} is in no mapping of process {pid}")
        return i

    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        def u64(addr):
            return struct.unpack("<Q", mem_read(mem, addr, 8))[0]

        xlist = u64(base + symbol_offset(binary, "job_list"))
        count = struct.unpack("<i", mem_read(mem, xlist + XLIST_COUNT, 4))[0]
        node = u64(xlist + XLIST_HEAD)
        nodes, records = [], []
        while node:
            data, nxt = struct.unpack("<QQ", mem_read(mem, node, 16))
            magic, = struct.unpack("<I", mem_read(mem, data, 4))
            if magic != JOB_MAGIC:
                raise LayoutError(f"job_list node {node:#x} points at {data:#x}, not a job record")
            nodes.append(node)
            records.append(data)
            node = nxt
            if len(nodes) > count:
                raise LayoutError(f"job_list has more nodes than its count {count} (changing?)")
    if len(nodes) != count:
        raise LayoutError(f"walked {len(nodes)} nodes of a job_list counting {count}")
    return summary(nodes, records, maps, region)


def mem_read(mem, addr, size):
    mem.seek(addr)
    data = mem.read(size)
    if len(data) != size:
        raise LayoutError(f"short read at {addr:#x}")
    return data


def summary(nodes, records, maps, region):
    touched = set()
    for node, rec in zip(nodes, records):
        touched.add(node >> 6)
        for off in READS:
            touched.add((rec + off) >> 6)
    pages = {line >> 6 for line in touched}
    where = [region(r) for r in records]
    counts = {}
    for i in where:
        name = maps[i][3] or "[anon]"
        key = f"{name}@{maps[i][0]:#x}"
        counts[key] = counts.get(key, 0) + 1
    switches = sum(1 for a, b in zip(where, where[1:]) if a != b)
    n = len(nodes)
    return {
        "jobs": n,
        "lines": len(touched),
        "pages": len(pages),
        "pte_lines": len({p >> 3 for p in pages}),
        "pmds": len({p >> 9 for p in pages}),
        "mappings": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        "switches": switches,
        "same_page": round(sum(1 for a, b in zip(nodes, nodes[1:]) if a >> 12 == b >> 12) / max(n - 1, 1), 3),
        "node_record_page": round(sum(1 for a, r in zip(nodes, records) if a >> 12 == r >> 12) / max(n, 1), 3),
    }


def text(label, s):
    per = s["jobs"] or 1
    maps = ", ".join(f"{k} {v}" for k, v in list(s["mappings"].items())[:4])
    return (f"{label}: {s['jobs']} jobs, lines {s['lines']} ({s['lines'] / per:.2f}/job), pages {s['pages']} "
            f"({s['pages'] / per:.2f}/job), pte lines {s['pte_lines']}, 2 MiB regions {s['pmds']}; consecutive "
            f"nodes on one page {s['same_page']}, node on its record's page {s['node_record_page']}; records in "
            f"{len(s['mappings'])} mappings ({maps}), {s['switches']} switches between neighbours")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pid", type=int)
    ap.add_argument("--binary", help="the process's executable (default: /proc/PID/exe)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        s = probe(args.pid, args.binary)
    except (LayoutError, OSError, subprocess.CalledProcessError) as e:
        print(f"heap_layout: {e}", file=sys.stderr)
        return 2
    print(json.dumps(s, indent=1) if args.json else text(f"slurmctld {args.pid}", s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
