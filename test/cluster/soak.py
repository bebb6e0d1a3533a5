#!/usr/bin/python3
"""The soak-with-faults scenario and the reconfigure stress (issue 12), on a Cluster.

Shared by test/integration/test_soak.py (short versions, in the default suite) and
scripts/soak (long versions, by hand). Stdlib only, like cluster.py.

Soak: standby "worker" jobs do `units` units of work (1 s each) on the owned nodes. On the
checkpoint signal (USR1) a worker takes SAVE_SECONDS to write its progress to
$SLURM_CHECKPOINT_DIR/progress, then exits 0: job_submit/preempt's watcher must requeue it,
and the next run resumes from the checkpoint. Each cycle an owner job (carol on n3-n4, dave on
n5-n6) preempts one worker. Faults come on given cycles: slurmctld restarted with TERM (after
the requeue), slurmctld killed (-9) 1.5 s into a grace and started 1 s later, one slurmd
restarted under a running worker, slurmdbd stopped across a whole preemption and started again.

Every worker's output is the ledger of its work: "start restart=R from=C" at each run,
"unit K" when unit K is done, "signal" and "checkpoint C" at a preemption, "done N" at the end.
Nothing here fails at the first problem: each one is recorded under a category (PROBLEM_KINDS)
with the evidence, the scenario goes on, and the caller asserts per category.
"""

import datetime
import random
import re
import shutil
import signal
import threading
import time
from collections import Counter, defaultdict

from cluster import (CLUSTER_POLICY_SHAPE, FINAL_STATES, NODES, OWNED_NODES, ClusterError, apply_policy, expand_nodes,
                     job_info, job_table, poll, reconfigure, release, settled_runs, ts)

GRACE = 10            # s, the standby QOS grace
SAVE_SECONDS = 3      # a worker's checkpoint takes this long: a fault can land inside it
UNIT_SECONDS = 1
OWNER_SECONDS = 3     # an owner job's run
KILL_AFTER = 1.5      # s after the checkpoint signal: slurmctld is killed mid-grace
KILL_DOWNTIME = 1.0
# s: slurmctld saves its job list at most this often (state_save.c SAVE_MAX_WAIT), when asked
# (a submission, a main-scheduler start, a job's end; not a start by backfill).
SLURM_SAVE_INTERVAL = 5
SLURM_SAVE_FILES = ("job_state", "node_state", "part_state", "resv_state", "trigger_state")
OWNER_SLACK = 5       # s: an owner's job must run within GRACE + this of the signal
MIN_REMAINING = 6     # units: a victim must not be able to finish during its preemption

# AuthInfo: a requeued job may start again cred_expire + 1 s after its requeue (5 is the least).
SOAK_CONF = "AuthInfo=cred_expire=5\n"

SOAK_POLICY = f"""\
version: 1
qos:
  standby:
    preemptible: true
    boost: 1000
    grace: {GRACE}s
    requeue: user
    min_runtime: 0
    limits:
      max_walltime: 310m
      max_running_jobs_per_user: 50
      max_cpus_per_user: 64
      max_gpus_per_user: 64
  normal:
    preempts: [standby]
    limits:
      max_walltime: 180m
      max_running_jobs_per_user: 50
      max_cpus_per_user: 64
      max_gpus_per_user: 64
  owner:
    preempts: [standby]
priority:
  weights: {{age: 1000, fairshare: 10000, qos: 0, partition: 0, job_size: 0, class: 0}}
  half_life: 1d
  max_age: 7d
  calc_period: 2s
""" + CLUSTER_POLICY_SHAPE
SOAK_WALLTIMES = {"standby": 310, "normal": 180}  # minutes: slurmctld has the synced QOS

WORKER = r"""#!/bin/bash
units=__UNITS__
ck="$SLURM_CHECKPOINT_DIR/progress"
done=0
if [ -s "$ck" ]; then done=$(cat "$ck"); fi
echo "start restart=${SLURM_RESTART_COUNT:-0} from=$done node=$SLURMD_NODENAME at $(date +%s.%N)"
save() {
  trap '' USR1
  echo "signal at $(date +%s.%N) after unit $done"
  sleep __SAVE__
  echo "$done" > "$ck.tmp" && mv "$ck.tmp" "$ck"
  echo "checkpoint $done at $(date +%s.%N)"
  exit 0
}
trap save USR1
while [ "$done" -lt "$units" ]; do
  sleep __UNIT__ & wait $!
  # One simple command: bash runs a trap only between commands, so a unit is counted and
  # reported together, never one without the other.
  echo "unit $((done += 1))"
done
echo "done $done at $(date +%s.%N)"
"""

# Categories of problems, each asserted by its own test.
PROBLEM_KINDS = {
    "completed": "every worker ends COMPLETED exactly once",
    "work": "every unit of work done exactly once, resumed from checkpoints",
    "restarts": "restart counts match the preemptions",
    "usage": "fair-share usage survives slurmctld restarts",
    "owners": "owner jobs run within the grace",
    "scenario": "the scenario could run (victims found, signals seen, daemons back)",
}

SHORT_PLAN = [None, "slurmctld-term", "slurmctld-kill", "slurmd", "slurmdbd", None]
LONG_PERIOD = [None, "slurmctld-term", None, "slurmctld-kill", None, "slurmd", None, "slurmdbd", None, None]


def long_plan(cycles):
    return [LONG_PERIOD[i % len(LONG_PERIOD)] for i in range(cycles)]


def parse_runs(text):
    """A worker's output as its runs: [{"restart", "from", "units", "signal", "checkpoint", "done"}]."""
    runs = []
    for line in text.splitlines():
        m = re.match(r"start restart=(\d+) from=(\d+)", line)
        if m:
            runs.append({"restart": int(m.group(1)), "from": int(m.group(2)), "units": [],
                         "signal": None, "checkpoint": None, "done": None})
            continue
        if not runs:
            continue
        run = runs[-1]
        if m := re.match(r"unit (\d+)$", line):
            run["units"].append(int(m.group(1)))
        elif m := re.match(r"signal at (\S+)", line):
            run["signal"] = float(m.group(1))
        elif m := re.match(r"checkpoint (\d+)", line):
            run["checkpoint"] = int(m.group(1))
        elif m := re.match(r"done (\d+)", line):
            run["done"] = int(m.group(1))
    return runs


def work_problems(runs, units):
    """What is wrong with a worker's ledger (empty: every unit done exactly once, each run
    resuming where the previous one checkpointed), and the number of units lost (done and
    then redone, or never done)."""
    problems = []
    done = [u for r in runs for u in r["units"]]
    counts = Counter(done)
    redone = sorted(u for u, n in counts.items() if n > 1)
    missing = sorted(set(range(1, units + 1)) - set(done))
    lost = sum(n - 1 for n in counts.values()) + len(missing)
    if redone:
        problems.append(f"units done more than once: {redone}")
    if missing:
        problems.append(f"units never done: {missing}")
    for i, run in enumerate(runs):
        if run["restart"] != i:
            problems.append(f"run {i} started with SLURM_RESTART_COUNT={run['restart']}")
        if i > 0 and run["from"] != runs[i - 1]["checkpoint"]:
            problems.append(f"run {i} resumed from {run['from']}, the previous run checkpointed "
                            f"{runs[i - 1]['checkpoint']}")
        if i < len(runs) - 1 and run["checkpoint"] is None:
            problems.append(f"run {i} ended without a checkpoint (signal "
                            f"{'seen' if run['signal'] else 'never seen'}) and the job ran again")
    if not runs or runs[-1]["done"] != units:
        problems.append(f"the last run did not finish the work (runs: {runs[-1:] or 'none'})")
    return problems, lost


def known_job_info(cluster, jobid):
    """job_info() while slurmctld keeps the job, else {} (purged after MinJobAge)."""
    try:
        return job_info(cluster, jobid)
    except ClusterError:
        return {}


class Soak:
    """The soak scenario on a started Cluster with SOAK_POLICY installed (see setup())."""

    def __init__(self, cluster, units=24, workers=3, dbd_downtime=20, say=None):
        self.c = cluster
        self.units, self.target, self.dbd_downtime = units, workers, dbd_downtime
        self.say = say or (lambda msg: None)
        self.workers = {}               # jobid -> {"name", "ckdir", "preempted"}
        self.finished = {}              # jobid -> outcome dict, once verified
        self.owners = []                # (owner, victim, signal epoch or None, node back epoch or None)
        self.counts = Counter()
        self.problems = defaultdict(list)
        self.lost_units = 0
        self.saved_usage = {}           # usage read just before the last clean shutdown (saved then)
        self._n = 0
        self._final_since = {}          # jobid -> when it was first seen in a final state

    # -- set-up and bookkeeping
    def setup(self):
        apply_policy(self.c, SOAK_POLICY, SOAK_WALLTIMES)

    def problem(self, kind, text):
        assert kind in PROBLEM_KINDS, kind
        self.problems[kind].append(text)
        self.say(f"PROBLEM ({kind}): {text}")

    def submit_worker(self):
        self._n += 1
        name = f"soak-w{self._n}"
        ckdir = self.c.jobs / f"ckpt-{name}-{time.time_ns()}"
        script = (WORKER.replace("__UNITS__", str(self.units)).replace("__SAVE__", str(SAVE_SECONDS))
                  .replace("__UNIT__", str(UNIT_SECONDS)))
        jobid = self.c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "--exclude=n1,n2", "--exclusive",
                               "-N1", "--time=30", "--open-mode=append", f"--checkpoint-dir={ckdir}",
                               "-J", name], script, user="alice")
        self.workers[jobid] = {"name": name, "ckdir": ckdir, "preempted": 0}
        return jobid

    def output(self, jobid):
        path = self.c.jobs / f"{jobid}.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def runs(self, jobid):
        return parse_runs(self.output(jobid))

    def active(self):
        return [j for j in self.workers if j not in self.finished]

    def top_up(self):
        """Submit workers until `workers` of them are not yet finished."""
        while len(self.active()) < self.target:
            self.submit_worker()

    def usage(self):
        """Accounts' RawUsage from sshare ({account: float}); None while sshare cannot answer."""
        r = self.c.run(["sshare", "-a", "-P", "-n", "-o", "Account,User,RawUsage"], check=False, timeout=30)
        if r.returncode != 0:
            return None
        found = {}
        for line in r.stdout.splitlines():
            account, user, raw = (line.split("|") + ["", "", ""])[:3]
            if account.strip() and not user:
                found[account.strip()] = float(raw or 0)
        return found or None

    # -- one cycle
    def victim(self, exclude=(), timeout=90):
        """A running worker on an owned node, in the middle of its current run (its trap set,
        at least MIN_REMAINING units left, not signalled yet), the least preempted first. Not
        on a node whose state has a '*' (it has not answered slurmctld since its restart): an
        owner's job for that node would wait for the node's answer (5-8 s here), longer than
        the victim's last MIN_REMAINING units; a CI run met it in the cycle after the crash."""
        def candidates():
            table = job_table(self.c)
            unanswered = {n for n, s in self.c.node_states().items() if s.endswith("*")}
            found = []
            for jobid in self.active():
                job = table.get(jobid)
                if jobid in exclude or not job or job["state"] != "RUNNING":
                    continue
                nodes = expand_nodes(job["nodes"])
                runs = self.runs(jobid)
                if len(nodes) != 1 or nodes[0] not in OWNED_NODES or nodes[0] in unanswered or not runs:
                    continue
                run = runs[-1]
                if run["units"] and run["signal"] is None and self.units - run["units"][-1] >= MIN_REMAINING:
                    found.append((self.workers[jobid]["preempted"], jobid, nodes[0]))
            if not found:
                # Workers that finished while this waits are replaced now, not at the next
                # cycle: all of them may finish in the same minute (a long soak met it).
                self.collect()
                self.top_up()
            return sorted(found)
        try:
            _, jobid, node = poll(candidates, timeout, "a worker to preempt", interval=0.5)[0]
            return jobid, node
        except ClusterError:
            return None, None

    def state_saved_at(self, files=("job_state",)):
        """When slurmctld last wrote any of these files of StateSaveLocation, epoch s (0: none)."""
        paths = [self.c.dir / "state" / f for f in files]
        return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)

    def quiet(self, timeout=60):
        """Wait until no job is about to change state by itself: every earlier owner job has
        ended and every active worker runs, a unit into its run, with MIN_REMAINING units to
        go; and slurmctld's last save of its job list is SLURM_SAVE_INTERVAL old, so that the
        owner job's submission that follows is saved at once (cycle() waits for that save
        before the crash). A slurmctld crash then hits the victim's grace alone: a crash
        recovers every job as slurmctld last saved it, which is Slurm's own crash semantics,
        not what this scenario tests. A CI run crashed slurmctld about 10 s after a worker's
        start and an owner's end, before a save of either: both came back as before them (the
        owner RUNNING with no process left until its node registers again, the worker started
        again with the same restart count, its first run's work done twice)."""
        def check():
            if any(self.c.job_state(o) not in FINAL_STATES for o, *_ in self.owners):
                return False
            table = job_table(self.c)
            for jobid in self.active():
                runs = self.runs(jobid)
                if runs and runs[-1]["done"] is not None and jobid not in table:
                    continue  # finished its work and gone: nothing more to come
                if table.get(jobid, {}).get("state") != "RUNNING" or not runs or not runs[-1]["units"] \
                        or self.units - runs[-1]["units"][-1] < MIN_REMAINING:
                    return False
            # One save thread writes them all, at most every SLURM_SAVE_INTERVAL.
            return time.time() - self.state_saved_at(SLURM_SAVE_FILES) >= SLURM_SAVE_INTERVAL + 0.5
        try:
            poll(check, timeout, "no job to be starting or ending", interval=0.5)
        except ClusterError as e:
            self.say(f"  (not quiet: {e.cause}; going on)")

    def cycle(self, i, fault=None):
        c = self.c
        self.counts["cycles"] += 1
        if fault == "slurmctld-kill":
            self.quiet()
        victim, node = self.victim()
        if victim is None:
            self.problem("scenario", f"cycle {i}: no running worker to preempt within 90 s "
                                     f"(jobs: {job_table(c)})")
            return
        runs_before = len(self.runs(victim))
        restarts_before = int(job_info(c, victim)["Restarts"])
        if fault == "slurmdbd":
            c.stop_slurmdbd()
            dbd_stopped = time.monotonic()
            self.counts["slurmdbd restarts"] += 1
        user = "carol" if node in ("n3", "n4") else "dave"
        t_submit = time.time()
        owner = c.sbatch(["-w", node, "--exclusive", "-N1", "--time=5", "-J", f"soak-owner-{i}"],
                         f"sleep {OWNER_SECONDS}", user=user)
        self.say(f"cycle {i}{' (' + fault + ')' if fault else ''}: owner job {owner} ({user}) for {node}, "
                 f"victim {victim} ({self.workers[victim]['name']}, run {runs_before - 1})")

        def run_now():
            runs = self.runs(victim)
            return runs[runs_before - 1] if len(runs) >= runs_before else None
        try:
            t_signal = poll(lambda: run_now()["signal"], 60, f"job {victim} to get its checkpoint signal")
        except ClusterError:
            t_signal = None
            o = known_job_info(c, owner) or {}
            self.problem("scenario", f"cycle {i}: job {victim} on {node} got no checkpoint signal within 60 s of "
                                     f"owner job {owner}'s submission (state {c.job_state(victim)}; the owner "
                                     f"{o.get('JobState')} {o.get('Reason')}, StartTime={o.get('StartTime')}; "
                                     f"nodes {c.node_states()})")
        t_node_back = None
        if fault == "slurmctld-kill" and t_signal is not None:
            # Slurm has saved its job list since the owner's submission (and so every job as
            # quiet() left it): the crash loses neither the owner job nor any other.
            try:
                poll(lambda: self.state_saved_at() > t_submit, 3 * SLURM_SAVE_INTERVAL,
                     f"slurmctld to save its job list after owner job {owner}'s submission", interval=0.1)
            except ClusterError as e:
                self.problem("scenario", f"cycle {i}: {e.cause}")
            time.sleep(max(0.0, t_signal + KILL_AFTER - time.time()))  # the fault's timing, not a wait
            kill_after = time.time() - t_signal
            if kill_after > GRACE:
                self.problem("scenario", f"cycle {i}: slurmctld saved the owner's submission only "
                                         f"{kill_after:.1f} s after the signal: the crash missed the grace")
            took = c.restart_slurmctld(signal.SIGKILL, downtime=KILL_DOWNTIME)
            self.counts["slurmctld restarts (KILL)"] += 1
            # A restarted slurmctld schedules nothing on a node until the node answers its ping
            # (sinfo shows the state with a '*' until then): Slurm's own, measured 5-8 s here.
            t_node_back = poll(lambda: (lambda s: time.time() if s and not s.endswith("*") else None)(
                c.run(["sinfo", "-h", "-n", node, "-o", "%T"], check=False).stdout.strip()), 60,
                f"{node} to answer the restarted slurmctld", interval=0.2)
            self.say(f"  slurmctld killed {kill_after:.1f} s into the grace, answering again after {took:.1f} s; "
                     f"{node} answered it {t_node_back - t_signal:.1f} s after the signal")
            if not known_job_info(c, owner):
                self.problem("scenario", f"cycle {i}: owner job {owner} is gone after the crash (submitted "
                                         f"{t_signal - t_submit:.1f} s before the signal, never saved)")
            self.check_usage("KILL", self.saved_usage)
        self.owners.append((owner, victim, t_signal, t_node_back))

        if t_signal is not None:
            try:
                poll(lambda: run_now()["checkpoint"] is not None, SAVE_SECONDS + GRACE + 30,
                     f"job {victim} to save its checkpoint")
            except ClusterError:
                self.problem("work", f"cycle {i}: job {victim} got the signal but wrote no checkpoint")
            # Requeued by the watcher: one more restart (the job may already run again). A job
            # that exited in its grace is COMPLETED until the watcher's next pass requeues it
            # (within a second): only the end of the grace (and some slack) settles it.
            def requeued():
                info = job_info(c, victim)
                return info if int(info.get("Restarts", "0")) > restarts_before else None
            try:
                info = poll(requeued, max(5.0, t_signal + GRACE + 10 - time.time()),
                            f"job {victim} to be requeued", interval=0.5)
            except ClusterError:
                info = job_info(c, victim)
            self.workers[victim]["preempted"] += 1  # it was preempted, requeued or not
            self.counts["preemptions"] += 1
            if int(info.get("Restarts", "0")) <= restarts_before:
                self.problem("completed", f"cycle {i}{' (' + fault + ')' if fault else ''}: job {victim} saved "
                                          f"its checkpoint in its grace but was not requeued: "
                                          f"JobState={info.get('JobState')} Restarts={info.get('Restarts')} "
                                          f"AdminComment={info.get('AdminComment')!r}; slurmctld.log: "
                                          + " | ".join(self.log_lines(victim)))

        if fault == "slurmctld-term":
            before = poll(self.usage, 30, "sshare to answer")
            took = c.restart_slurmctld(signal.SIGTERM)
            self.counts["slurmctld restarts (TERM)"] += 1
            self.say(f"  slurmctld restarted with TERM, answering again after {took:.1f} s")
            # What slurmctld saved at its clean shutdown: a later crash may lose what accrued
            # after it (slurmctld saves assoc usage every 5 minutes), never this.
            if self.check_usage("TERM", before) is not None:
                self.saved_usage = before
        if fault == "slurmd":
            other, where = self.victim(exclude=(victim,), timeout=30)
            where = where or node
            took = c.restart_slurmd(where)
            self.counts["slurmd restarts"] += 1
            self.say(f"  slurmd of {where} restarted (running worker {other}), registered after {took:.1f} s")
        if fault == "slurmdbd":
            time.sleep(max(0.0, dbd_stopped + self.dbd_downtime - time.monotonic()))  # the outage itself
            c.start_slurmdbd()
            c.wait_slurmdbd()
            self.say(f"  slurmdbd back after {time.monotonic() - dbd_stopped:.1f} s down")

    def log_lines(self, jobid, last=12):
        """The slurmctld log's last lines about the job: the evidence for a problem."""
        pattern = re.compile(rf"JobId={jobid}\b")
        return [line for line in self.c.log("slurmctld").splitlines() if pattern.search(line)][-last:]

    def check_usage(self, how, before):
        """After a slurmctld restart: every account's usage is back, not reset: at least 95 %
        of `before` (half-life 1 day: decay is negligible) less one unit, and non-zero where it
        was at least 2. sshare prints RawUsage truncated to an integer, so a usage of 6.01 that
        decays to 5.99 reads 6, then 5 (a short soak's accounts have single digits: a CI run
        failed on exactly that). Returns the usage read."""
        try:
            after = poll(self.usage, 30, "sshare to answer after the restart")
        except ClusterError as e:
            self.problem("usage", f"after the {how} restart: {e.cause}")
            return None
        for account, raw in before.items():
            now = after.get(account, 0)
            if raw > 0 and not (now >= 0.95 * raw - 1 and (now > 0 or raw < 2)):
                self.problem("usage", f"after the {how} restart, account {account}'s RawUsage is "
                                      f"{after.get(account)}, before it was {raw:.0f}")
        self.say(f"  usage before {dict((a, round(u)) for a, u in before.items())}, "
                 f"after {dict((a, round(u)) for a, u in after.items())}")
        self.counts[f"usage checks ({how})"] += 1
        return after

    # -- the end
    def ended(self, jobid):
        """The worker's final state, or None while it may still run: a worker that exited in
        its grace is COMPLETED for a moment before the watcher requeues it, so a final state
        counts only with the whole work done or once it has lasted past any grace."""
        state = self.c.job_state(jobid)
        if state not in FINAL_STATES:
            self._final_since.pop(jobid, None)
            return None
        runs = self.runs(jobid)
        if runs and runs[-1]["done"] is not None:
            return state
        since = self._final_since.setdefault(jobid, time.monotonic())
        return state if time.monotonic() - since >= GRACE + 5 else None

    def collect(self):
        """Verify every worker that has ended since the last call (while slurmctld still has it)."""
        for jobid in self.active():
            state = self.ended(jobid)
            if state is not None:
                self.verify(jobid, state)

    def finish(self, timeout=None):
        """Wait for every worker and owner job to end, then verify each worker."""
        timeout = timeout or self.units * UNIT_SECONDS * 3 + 120
        try:
            poll(lambda: all([self.ended(j) for j in self.active()]) and
                 all(self.c.job_state(o) in FINAL_STATES for o, *_ in self.owners),
                 timeout, "every worker and owner job to end", interval=1)
        except ClusterError as e:
            self.problem("completed", f"{e.cause}: {[(j, self.c.job_state(j)) for j in self.active()]}")
        self.collect()
        for owner, victim, t_signal, t_node_back in self.owners:
            self.verify_owner(owner, victim, t_signal, t_node_back)

    def verify_owner(self, owner, victim, t_signal, t_node_back=None):
        """The owner ran within OWNER_SLACK of its victim's grace end, or, after a slurmctld
        crash, of the moment the restarted slurmctld had the node back, whichever is later."""
        info = self.owner_info(owner)
        if info.get("JobState") != "COMPLETED":
            self.problem("owners", f"owner job {owner} ended {info.get('JobState')}, not COMPLETED")
        elif t_signal is not None:
            waited = ts(info["StartTime"]) - int(t_signal)
            ready = GRACE if t_node_back is None else max(GRACE, t_node_back - t_signal)
            if waited > ready + OWNER_SLACK:
                self.problem("owners", f"owner job {owner} started {waited:.0f} s after job {victim}'s checkpoint "
                                       f"signal (grace {GRACE} s, the victim saved in {SAVE_SECONDS} s"
                                       + (f", its node back {t_node_back - t_signal:.0f} s after the signal)"
                                          if t_node_back is not None else ")"))

    def owner_info(self, owner):
        """JobState and StartTime of an owner job: from slurmctld while it keeps the job, else
        (a long soak outlives MinJobAge, 300 s) from sacct; {} when neither knows it."""
        info = known_job_info(self.c, owner)
        if info:
            return info
        rows = [r for r in self.c.sacct(owner, ["State", "Start"]) if r["JobID"] == str(owner)]
        return {"JobState": rows[0]["State"].split()[0], "StartTime": rows[0]["Start"]} if rows else {}

    def verify(self, jobid, state):
        """Check one ended worker; record problems; remember the outcome."""
        c, w = self.c, self.workers[jobid]
        info = known_job_info(c, jobid)
        runs = self.runs(jobid)
        problems, lost = work_problems(runs, self.units)
        self.lost_units += lost
        for p in problems:
            self.problem("work", f"job {jobid} ({w['name']}): {p}")

        # sacct: one record per run; the last COMPLETED, the earlier ones PREEMPTED or REQUEUED.
        # Judged once every record has ended: after a slurmdbd outage Slurm writes the last
        # run's record seconds before the earlier runs' ends (cluster.settled_runs).
        restarts = int(info["Restarts"]) if "Restarts" in info else None
        want = len(runs) if restarts is None else restarts + 1
        rows = [r["State"].split()[0] for r in settled_runs(c, jobid, want)]
        if state != "COMPLETED" or rows.count("COMPLETED") != 1 or rows[-1] != "COMPLETED":
            self.problem("completed", f"job {jobid} ({w['name']}) ended {state}; sacct -D runs: {rows} "
                                      f"(AdminComment={info.get('AdminComment')!r})")
        elif any(s not in ("PREEMPTED", "REQUEUED") for s in rows[:-1]):
            self.problem("completed", f"job {jobid} ({w['name']}): earlier runs not PREEMPTED/REQUEUED: {rows}")

        signalled = sum(1 for r in runs if r["signal"] is not None)
        counts = {"preemptions": w["preempted"], "Restarts": restarts, "runs - 1": len(runs) - 1,
                  "sacct runs - 1": len(rows) - 1, "signals": signalled}
        if len({v for v in counts.values() if v is not None}) != 1:
            self.problem("restarts", f"job {jobid} ({w['name']}): {counts}")
        ok = not problems and state == "COMPLETED"
        self.counts["workers completed" if ok else "workers with a problem"] += 1
        self.finished[jobid] = {"state": state, "runs": len(runs), "sacct": rows, "lost": lost, "ok": ok}

    def report(self):
        lines = [f"cycles: {self.counts['cycles']}", f"preemptions: {self.counts['preemptions']}",
                 f"slurmctld restarts: {self.counts['slurmctld restarts (TERM)']} TERM, "
                 f"{self.counts['slurmctld restarts (KILL)']} KILL mid-grace",
                 f"slurmd restarts: {self.counts['slurmd restarts']}",
                 f"slurmdbd restarts: {self.counts['slurmdbd restarts']} ({self.dbd_downtime} s down each)",
                 f"workers: {len(self.workers)} submitted, {self.counts['workers completed']} completed with all "
                 f"their work, {self.counts['workers with a problem']} with a problem, "
                 f"{len(self.active())} not ended",
                 f"work units lost: {self.lost_units}"]
        for kind, text in self.problems.items():
            lines.append(f"problems ({PROBLEM_KINDS[kind]}): {len(text)}")
            lines += [f"  {t}" for t in text]
        return "\n".join(lines)

    def run(self, plan):
        """setup(), the workers, one cycle per plan entry (None: no fault), finish(). Workers
        that end are verified at once and replaced, so `workers` of them are there to preempt."""
        self.setup()
        for i, fault in enumerate(plan):
            self.collect()
            self.top_up()
            self.cycle(i, fault)
        self.finish()
        return self


# --- reconfigure with a changed plugin list, under load -------------------------------------

PLUGIN_LISTS = ["preempt", None, "preempt,logging", "logging"]  # None: no JobSubmitPlugins line
BAD_LOG = re.compile(r"fatal|deadlock|Segmentation fault|[Aa]ssertion|double free|corrupted|"
                     r"error: .*(lock|mutex|pthread)", re.I)

# Runs until released (cluster.release), and ignores nothing: without the watcher a preempted
# job is killed at the grace's end and requeued by Slurm; with it, it is requeued too.
HOLDER = """\
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.5; done
"""


class Load:
    """Background load for the reconfigure stress: a submitter of short jobs (bob, public, 1 s)
    and an owner loop that preempts running standby jobs on the owned nodes."""

    def __init__(self, cluster, standby=2, submit_every=0.5, preempt_every=3):
        self.c = cluster
        self.submit_every, self.preempt_every = submit_every, preempt_every
        self.stop = threading.Event()
        self.short, self.owners, self.errors = [], [], []
        self.standby = [cluster.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", node, "--exclusive",
                                        "-N1", "--time=30", "--open-mode=append", "-J", f"reconf-standby-{node}"],
                                       HOLDER, user="alice") for node in OWNED_NODES[::2][:standby]]
        self.threads = [threading.Thread(target=self._submitter, daemon=True),
                        threading.Thread(target=self._preempter, daemon=True)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=150)

    def _submitter(self):
        while not self.stop.wait(self.submit_every):
            r = self.c.run(["sbatch", "--parsable", "-p", "public", "-N1", "-n1", "--time=1", "-o", "/dev/null",
                            "-J", "reconf-short", "--wrap", "sleep 1"], user="bob", check=False, timeout=60)
            if r.returncode == 0:
                self.short.append(int(r.stdout.strip().split(";")[0]))
            else:
                self.errors.append(f"{time.strftime('%H:%M:%S')} sbatch: {r.stderr.strip()}")

    def _preempter(self):
        while not self.stop.wait(self.preempt_every):
            try:
                table = job_table(self.c)
            except ClusterError as e:
                self.errors.append(f"{time.strftime('%H:%M:%S')} squeue: {e.cause}")
                continue
            running = [(j, table[j]["nodes"]) for j in self.standby if table.get(j, {}).get("state") == "RUNNING"]
            if not running:
                continue
            jobid, node = running[len(self.owners) % len(running)]
            user = "carol" if node in ("n3", "n4") else "dave"
            r = self.c.run(["sbatch", "--parsable", "-w", node, "-p", "chem" if user == "carol" else "bio",
                            "--qos=owner", "--exclusive", "-N1", "--time=5", "-o", "/dev/null", "-J", "reconf-owner",
                            "--wrap", "sleep 2"], user=user, check=False, timeout=60)
            if r.returncode == 0:
                self.owners.append(int(r.stdout.strip().split(";")[0]))
            else:
                self.errors.append(f"{time.strftime('%H:%M:%S')} owner sbatch: {r.stderr.strip()}")

    def all_jobs(self):
        return [*self.standby, *self.short, *self.owners]


def thread_stacks(cluster, name="slurmctld"):
    """Every thread's backtrace of a daemon (gdb, if installed), saved as log/<name>-stacks.txt:
    the evidence for a hang. Returns the text ("" without gdb)."""
    pid = cluster.running_pid(name)
    if pid is None or not shutil.which("gdb"):
        return ""
    r = cluster.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"], check=False, timeout=120)
    (cluster.dir / "log" / f"{name}-stacks.txt").write_text(r.stdout + r.stderr)
    return r.stdout


def hang_summary(stacks):
    """From a gdb dump, the threads that run slurm-preempt code or unload a plugin, one line
    each: the thread, what it waits in (a lock, a join), and its frames in our code
    (function at file:line), innermost first."""
    lines = []
    for block in re.split(r"\n(?=Thread \d+ )", stacks):
        head = re.match(r"Thread (\d+) .*?\"(\S+)\"", block)
        frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(.+?) \(.*?\)(?: at (\S+:\d+))?$", block, re.M)
        ours = [f"{fn} at {where}" if where else fn for fn, where in frames
                if fn.startswith(("sp::", "fini", "init", "job_submit_plugin", "priority_p", "slurm_spank"))]
        if not head or not ours:
            continue
        names = [fn for fn, _ in frames]
        wait = next((fn for pattern in (r"^lock_slurmctld$|^assoc_mgr_lock$", r"join", r"rwlock|cond_wait|mutex_lock")
                     for fn in names if re.search(pattern, fn)), "?")
        lines.append(f"thread {head.group(1)} ({head.group(2)}) waits in {wait}: " + " <- ".join(dict.fromkeys(ours)))
    return lines


# Stock Slurm's own race, not the plugins': `scontrol reconfigure` zeroes slurm_conf
# (read_config.c _destroy_slurm_conf) while slurmctld's agent threads read
# slurm_conf.msg_timeout unlocked, so an RPC sent in that instant times out at once. When that
# RPC is the REQUEST_LAUNCH_PROLOG (msg_type 6017) of a job just allocated (PrologFlags=contain),
# its slurmd gives up on the prolog after 20 s: Slurm requeues the job held ("launch failed
# requeued held", priority 0) and drains the node ("Prolog error"). Seen once in the CI of
# 2026-12-02 (JobId=59, a public short job). Nothing is lost, but the job waits for an admin.
# The same hold comes from slurmd's side of a reconfigure: its message loop (slurmd.c
# _msg_engine) waits up to 5 s for its RPC threads before it reconfigures, accepting no
# connection meanwhile ("slurmd doesn't accept new connections during this time"), and the
# batch launch thread it waits for is itself waiting for the REQUEST_LAUNCH_PROLOG that only a
# new connection brings. With reconfigures a second apart the notification misses its 20 s;
# slurmd logs "Timeout waiting for completion of 1 threads" for each wait (CI of 2026-12-06,
# JobId=40, allocated in the millisecond of a reconfigure; slurmctld logged no send error).
LAUNCH_HOLD = re.compile(r"launch.failed.requeued.held", re.I)
LOST_PROLOG_RPC = re.compile(r"error: slurm_msg_sendto: address:port=\S+ msg_type=6017: Socket timed out")
SLURMD_STALLED = re.compile(r"^\[([0-9T:.-]+)\] error: Timeout waiting for completion of \d+ threads", re.M)
PROLOG_GIVEN_UP = "Waiting for JobId={} REQUEST_LAUNCH_PROLOG notification failed, giving up after"


def slurmd_stalled_before_giving_up(log, jobid):
    """Whether a slurmd's log shows its reconfigure waiting for its RPC threads (accepting
    nothing) within the 20 s before it gave up on JobId=jobid's prolog notification."""
    line = next((ln for ln in log.splitlines() if PROLOG_GIVEN_UP.format(jobid) in ln), None)
    if line is None or not line.startswith("["):
        return False
    gave_up = datetime.datetime.fromisoformat(line[1:line.index("]")])
    return any(0 <= (gave_up - datetime.datetime.fromisoformat(m.group(1))).total_seconds() <= 20
               for m in SLURMD_STALLED.finditer(log))


def release_slurm_launch_holds(cluster, jobs, ctld_mark, released, say):
    """Do what an admin does for a job in Slurm's launch-failure hold: resume the nodes drained
    for "Prolog error" and release the job. Only for the race above: a job of `jobs` held so
    whose slurmd logged the missed prolog notification, with a lost REQUEST_LAUNCH_PROLOG in
    the slurmctld log since `ctld_mark`. Released jobs are added to `released`. Returns the
    problems: a launch-failure hold without that evidence is not this race."""
    out = cluster.run(["squeue", "-h", "-t", "PD", "-o", "%A|%r"], check=False, timeout=30).stdout
    held = [int(j) for j, reason in (line.split("|", 1) for line in out.splitlines() if "|" in line)
            if LAUNCH_HOLD.search(reason) and int(j) in jobs and int(j) not in released]
    if not held:
        return []
    problems = []
    lost_rpc = LOST_PROLOG_RPC.search(cluster.log("slurmctld")[ctld_mark:])
    drained = cluster.run(["sinfo", "-h", "-R", "-o", "%E|%N"], check=False, timeout=30).stdout
    for line in drained.splitlines():
        reason, _, nodes = line.partition("|")
        if reason.strip() == "Prolog error":
            cluster.run(["scontrol", "update", f"nodename={nodes.strip()}", "state=resume"], check=False)
    for jobid in held:
        missed = [n for n in NODES if PROLOG_GIVEN_UP.format(jobid) in cluster.log(f"slurmd-{n}")]
        stalled = any(slurmd_stalled_before_giving_up(cluster.log(f"slurmd-{n}"), jobid) for n in missed)
        if not (missed and (lost_rpc or stalled)):
            problems.append(f"JobId={jobid} is in Slurm's launch-failure hold without a lost REQUEST_LAUNCH_PROLOG "
                            f"(slurmctld: {bool(lost_rpc)}, slurmd: {bool(missed)}, "
                            f"slurmd stalled in a reconfigure: {stalled})")
        else:
            say(f"JobId={jobid}: Slurm lost its REQUEST_LAUNCH_PROLOG in a reconfigure "
                f"({'slurmctld' if lost_rpc else 'slurmd'}'s side) and held it; node resumed, job released")
        cluster.update_job(["scontrol", "release", str(jobid)], check=False)
        released.append(jobid)
    return problems


def configured_plugins(cluster):
    out = cluster.run(["scontrol", "show", "config"], timeout=30).stdout
    m = re.search(r"^JobSubmitPlugins\s*=\s*(.*)$", out, re.M)
    value = m.group(1).strip() if m else "(null)"
    return None if value in ("(null)", "") else value


def reconfigure_stress(cluster, cycles, deadline=20, say=None, seed=None):
    """`cycles` times: change JobSubmitPlugins (PLUGIN_LISTS in turn), `scontrol reconfigure`,
    and require within `deadline` s: scontrol ping UP, the new list in `scontrol show config`,
    squeue answering; all under Load. Then every job of the load ends COMPLETED, and the
    slurmctld log since the start has no fatal/deadlock/lock error line. Returns
    (problems, stats); problems empty when all held. `seed` fixes the random pauses (default:
    the clock; it is printed through `say`)."""
    seed = int(time.time()) if seed is None else seed
    say = say or (lambda msg: None)
    rng = random.Random(seed)
    say(f"reconfigure stress: {cycles} cycles, seed {seed}")
    problems, times = [], []
    mark = len(cluster.log("slurmctld"))
    load = Load(cluster)
    for j in load.standby:
        cluster.wait_job_state(j, "RUNNING", timeout=60)
    try:
        with load:
            for k in range(cycles):
                value = PLUGIN_LISTS[(k + 1) % len(PLUGIN_LISTS)]
                # A random phase against the watcher's one-second tick (it ticks every second
                # while it follows a job in a grace, as the load's preemptions every few seconds
                # keep it doing): the unload must find it at any point of its pass, waiting for
                # slurmctld's locks included.
                time.sleep(rng.uniform(0, 1))
                cluster.set_conf(JobSubmitPlugins=value)
                t0 = time.monotonic()
                try:
                    reconfigure(cluster, timeout=deadline)
                    poll(cluster.slurmctld_answers, deadline, "slurmctld to answer scontrol ping")
                    poll(lambda: configured_plugins(cluster) == value, deadline,
                         f"JobSubmitPlugins={value} in scontrol show config")
                    cluster.run(["squeue", "-h"], timeout=deadline)
                except ClusterError as e:
                    problems.append(f"cycle {k} (JobSubmitPlugins={value or '(none)'}): {e.cause}")
                    say(f"PROBLEM: {problems[-1]}")
                    hung = cluster.run(["squeue", "-h"], check=False, timeout=30).returncode != 0 \
                        if cluster.slurmctld_answers() else False
                    if hung:
                        stacks = thread_stacks(cluster)
                        problems.append("slurmctld answers ping but not squeue: hung; threads waiting: "
                                        + (" || ".join(hang_summary(stacks)) or "(no gdb dump)"))
                        say(f"PROBLEM: {problems[-1]}")
                    break
                times.append(time.monotonic() - t0)
                say(f"reconfigure {k}: JobSubmitPlugins={value or '(none)'}, answering after {times[-1]:.2f} s")
    finally:
        cluster.reset_conf()
    if problems:  # slurmctld may be hung: nothing more to learn from it
        return problems, {"cycles": len(times), "max_seconds": max(times, default=0)}
    reconfigure(cluster, timeout=deadline)
    release(cluster, *load.standby)
    jobs = load.all_jobs()
    released = []

    def ended():
        problems.extend(release_slurm_launch_holds(cluster, jobs, mark, released, say))
        return all(cluster.job_state(j) in FINAL_STATES for j in jobs)
    try:
        poll(ended, 180, "every job of the load to end", interval=1)
    except ClusterError as e:
        waiting = [(j, s, job_info(cluster, j).get("Reason") if s == "PENDING" else None)
                   for j in jobs if (s := cluster.job_state(j)) not in FINAL_STATES]
        problems.append(f"{e.cause}: {waiting}")
    lost = [(j, s) for j in jobs if (s := cluster.job_state(j)) != "COMPLETED"]
    if lost:
        problems.append(f"jobs not COMPLETED: {lost}")
    bad = [line for line in cluster.log("slurmctld")[mark:].splitlines() if BAD_LOG.search(line)]
    if bad:
        problems.append("slurmctld log: " + " | ".join(bad[:10]))
    # A refused submission is no lost job (none was created); it is reported, not failed on:
    # seen once in ~100 cycles here as "Connection reset by peer" after slurmctld timed out
    # reading the request, with munged shared by five busy clusters.
    stats = {"cycles": len(times), "max_seconds": max(times, default=0), "short_jobs": len(load.short),
             "client_errors": load.errors,
             "owner_jobs": len(load.owners), "released_from_slurms_launch_hold": released,
             "standby_restarts": [job_info(cluster, j).get("Restarts") for j in load.standby]}
    return problems, stats
