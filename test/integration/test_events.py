"""Issue 16.1, `preemptctl events JOB [--json]` on the real cluster: one job's story, run by run,
from slurmdbd, slurmctld and the plugins' AdminComment notes, for the job's owner and for root.
Its own cluster (SLURM_PREEMPT_PORT_OFFSET + 300): the slurmdbd-down case stops slurmdbd."""

import json
import re
import time

import pytest

from cluster import (PREEMPTCTL, Cluster, job_info, poll, policy_installed, release,
                     settled_runs)
from conftest import PORT_OFFSET
from test_checkpoint import output, preempt
from test_restart import SAVES
from test_owners import owner_policy, wait_start

GRACE = 10  # s: the standby grace of this module's policy
NODE = "n3"  # an owned node (chem): carol's owner jobs reclaim it

# Ignores its signal: only the kill at the grace's end stops its first run.
IGNORES = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then exit 0; fi
trap '' TERM USR1 USR2
while true; do sleep 1; done
"""
LINE = re.compile(r"^(\S+)\s+run (\d+)\s+(\S+)\s+(.*)$")


@pytest.fixture(scope="module")
def ec():
    c = Cluster(with_plugins=True, port_offset=PORT_OFFSET + 300)
    with c:
        with policy_installed(c, *owner_policy(GRACE)):
            yield c


def events(c, job, *args, user=None):
    return c.run([str(PREEMPTCTL), "events", str(job), *args], user=user, check=False, timeout=60)


def table(c, job, user=None):
    """[(run, event, details)] of `preemptctl events JOB`; asserts every line is whole."""
    r = events(c, job, user=user)
    assert r.returncode == 0 and not r.stderr, r
    rows = []
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        assert m, line
        rows.append((int(m.group(2)), m.group(3), m.group(4)))
    print(r.stdout)
    return rows


def expect_in_order(rows, expected):
    """Each (run, event, regex) of `expected` matches a row, in this order."""
    i = 0
    for run, event, pattern in expected:
        while i < len(rows) and not (rows[i][0] == run and rows[i][1] == event and
                                     re.search(pattern, rows[i][2])):
            i += 1
        assert i < len(rows), (f"no run {run} {event} /{pattern}/ in order", rows)
        i += 1


def submit(c, script):
    ckdir = c.jobs / f"ckpt-{time.time_ns()}"
    return c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "-N1", "--exclusive",
                     "--time=30", "--open-mode=append", f"--checkpoint-dir={ckdir}"], script, user="alice")


def test_a_preempted_job_that_saves_in_its_grace_tells_its_story(ec):
    victim = submit(ec, SAVES)
    wait_start(ec, victim, 0, 30)
    owner, _ = preempt(ec, victim, "start")
    poll(lambda: job_info(ec, victim).get("Restarts") == "1", GRACE + 10, "the victim to be requeued")
    ec.wait_job_state(owner, "RUNNING", timeout=15)
    release(ec, owner)
    poll(lambda: "restart=1" in output(ec, victim), 60, "the victim's second run")
    release(ec, victim)
    ec.wait_job_state(victim, "COMPLETED", timeout=30)
    settled_runs(ec, victim, 2)
    expected = [
        (0, "submitted", r"^by alice, account public, qos standby, partition standby$"),
        (0, "started", rf"^on {NODE}$"),
        (0, "preempted", rf"^by JobId={owner} of carol \(qos owner, account chem\): owner reclaim$"),
        (0, "signal", rf"^USR1 to the job's processes that catch it, grace {GRACE} s"),
        (0, "exited", r"^in its grace \(exit 0\), requeued as restart 1$"),
        (0, "ended", r"^PREEMPTED"),
        (1, "requeued", r"^as restart 1$"),
        (1, "eligible", r"again"),
        (1, "started", rf"^on {NODE}, restart 1$"),
        (1, "completed", r"^exit 0:0$"),
    ]
    as_owner = table(ec, victim, user="alice")
    expect_in_order(as_owner, expected)
    t0 = time.monotonic()
    as_root = table(ec, victim)
    took = time.monotonic() - t0
    print(f"preemptctl events {victim} (as root): {took:.3f} s")
    assert took <= 0.5
    assert as_root == as_owner
    assert not [r for r in as_root if r[1] == "unparsed"], as_root
    # --json: one document, the same events in the same order, times in UTC.
    r = events(ec, victim, "--json", user="alice")
    assert r.returncode == 0 and not r.stderr, r
    doc = json.loads(r.stdout)
    assert doc["job"] == str(victim)
    assert [(e["run"], e["event"], e["details"]) for e in doc["events"]] == as_owner
    preempted = next(e for e in doc["events"] if e["event"] == "preempted")
    assert preempted["by_job"] == owner and preempted["by_user"] == "carol"
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e["time"]) for e in doc["events"])
    assert [e["epoch"] for e in doc["events"]] == sorted(e["epoch"] for e in doc["events"])


def test_a_job_killed_at_the_deadline(ec):
    victim = submit(ec, IGNORES)
    wait_start(ec, victim, 0, 30)
    owner, _ = preempt(ec, victim, "start")
    poll(lambda: job_info(ec, victim).get("Restarts") == "1", GRACE + 15, "the victim to be killed and requeued")
    ec.wait_job_state(owner, "RUNNING", timeout=15)
    release(ec, owner)
    ec.wait_job_state(victim, "COMPLETED", timeout=60)
    settled_runs(ec, victim, 2)
    expect_in_order(table(ec, victim, user="alice"), [
        (0, "preempted", rf"^by JobId={owner} of carol"),
        (0, "signal", rf"grace {GRACE} s"),
        (0, "killed", r"^at the grace's end, requeued as restart 1$"),
        (1, "requeued", r"^as restart 1$"),
        (1, "started", rf"^on {NODE}, restart 1$"),
        (1, "completed", r""),
    ])


def test_a_pause_and_resume(ec):
    job = submit(ec, SAVES)
    wait_start(ec, job, 0, 30)
    poll(lambda: "start" in output(ec, job), 20, "the job's first line")
    r = ec.run([str(PREEMPTCTL), "pause", str(job)], user="alice", check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    poll(lambda: job_info(ec, job).get("Reason") == "JobHeldUser", GRACE + 10, "the job to be held")
    expect_in_order(table(ec, job, user="alice"), [
        (0, "paused", rf"^by alice, grace {GRACE} s$"),
        (0, "exited", r"requeued held as restart 1 \(paused\)$"),
        (1, "requeued", r"^as restart 1$"),
        (1, "pending", r"^now, reason JobHeldUser$"),
    ])
    r = ec.run([str(PREEMPTCTL), "resume", str(job)], user="alice", check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    poll(lambda: "restart=1" in output(ec, job), 60, "the job's second run")
    release(ec, job)
    ec.wait_job_state(job, "COMPLETED", timeout=30)
    settled_runs(ec, job, 2)
    expect_in_order(table(ec, job), [
        (0, "paused", r"^by alice"),
        (1, "resumed", r"^by alice$"),
        (1, "started", rf"^on {NODE}, restart 1$"),
        (1, "completed", r""),
    ])


def one_error_line(r, status, pattern):
    assert r.returncode == status and not r.stdout, r
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), r.stderr


def test_bad_input_is_one_line_and_non_zero(ec):
    one_error_line(events(ec, "abc", user="alice"), 2, r"^preemptctl: 'abc' is not a job id")
    one_error_line(events(ec, "4000000", user="alice"), 1,
                   r"^preemptctl: job 4000000: no such job in slurmdbd or slurmctld")
    r = ec.run([str(PREEMPTCTL), "events"], check=False)
    assert r.returncode == 2 and "usage: preemptctl events JOB [--json]" in r.stderr
    job = ec.sbatch(["-N1"], "true", user="alice")
    ec.wait_job_state(job, "COMPLETED", timeout=30)
    settled_runs(ec, job, 1)
    ec.stop_slurmdbd()
    try:
        one_error_line(events(ec, job, user="alice"), 1,
                       rf"^preemptctl: job {job}: slurmdbd did not answer .*try again once slurmdbd runs")
    finally:
        ec.start_slurmdbd()
