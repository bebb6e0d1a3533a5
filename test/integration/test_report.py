"""Issue 16.2 (first slice), `preemptctl report` on the real cluster: alice's job is preempted
and saves in its grace, dave's is preempted and killed at the grace's end, bob's is never
preempted; the report over slurmdbd's records counts them per account and user, in table, csv
and json, as root and filtered, and refuses bad input in one line. Its own cluster
(SLURM_PREEMPT_PORT_OFFSET + 710): the slurmdbd-down case stops slurmdbd."""

import csv
import io
import json
import re
import time

import pytest

from cluster import PREEMPTCTL, Cluster, job_info, poll, policy_installed, release, settled_runs
from conftest import PORT_OFFSET
from test_checkpoint import output, preempt
from test_events import IGNORES, NODE, SAVES
from test_owners import owner_policy, wait_start

GRACE = 10  # s: the standby grace of this module's policy
GPUS = 4  # every GPU of the node: the lost GPU-hours of a short run are still visible


@pytest.fixture(scope="module")
def rc():
    c = Cluster(with_plugins=True, port_offset=PORT_OFFSET + 710)
    with c:
        with policy_installed(c, *owner_policy(GRACE)):
            yield c


def report(c, *args, user=None):
    return c.run([str(PREEMPTCTL), "report", *args], user=user, check=False, timeout=60)


def submit(c, script, user):
    ckdir = c.jobs / f"ckpt-{time.time_ns()}"
    return c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "-N1", "--exclusive",
                     f"--gres=gpu:{GPUS}", "--time=30", "--open-mode=append",
                     f"--checkpoint-dir={ckdir}"], script, user=user)


def preempted_and_back(c, victim, min_run_s=0):
    """Preempt the victim with an owner job once it has run `min_run_s`; let it run again."""
    started = wait_start(c, victim, 0, 30)
    poll(lambda: time.time() - started >= min_run_s, min_run_s + 5, f"job {victim} to run {min_run_s} s")
    owner, _ = preempt(c, victim, "start")
    poll(lambda: job_info(c, victim).get("Restarts") == "1", GRACE + 15, "the victim to be requeued")
    c.wait_job_state(owner, "RUNNING", timeout=15)
    release(c, owner)
    poll(lambda: "restart=1" in output(c, victim), 60, "the victim's second run")
    release(c, victim)
    c.wait_job_state(victim, "COMPLETED", timeout=60)
    c.wait_job_state(owner, "COMPLETED", timeout=30)
    settled_runs(c, victim, 2)
    settled_runs(c, owner, 1)
    return owner


@pytest.fixture(scope="module")
def jobs(rc):
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
    saver = submit(rc, SAVES, "alice")
    preempted_and_back(rc, saver)
    killed = submit(rc, IGNORES, "dave")
    preempted_and_back(rc, killed, min_run_s=20)
    never = rc.sbatch(["-N1", "-p", "public"], "true", user="bob")
    rc.wait_job_state(never, "COMPLETED", timeout=30)
    settled_runs(rc, never, 1)
    return {"since": since, "saver": saver, "killed": killed, "never": never}


def json_report(c, *args, user=None):
    r = report(c, "--format", "json", *args, user=user)
    assert r.returncode == 0 and not r.stderr, r
    print(r.stdout)
    doc = json.loads(r.stdout)
    return doc, {u["name"]: u for u in doc["users"]}, {a["name"]: a for a in doc["accounts"]}


def test_the_report_counts_preemptions_and_lost_work_per_user_and_account(rc, jobs):
    doc, users, accounts = json_report(rc, "--since", jobs["since"])
    alice, dave, bob, carol = users["alice"], users["dave"], users["bob"], users["carol"]
    assert (alice["jobs"], alice["jobs_preempted"], alice["preemptions"]) == (1, 1, 1)
    assert (dave["jobs"], dave["jobs_preempted"], dave["preemptions"]) == (1, 1, 1)
    assert (bob["jobs"], bob["jobs_preempted"], bob["preemptions"]) == (1, 0, 0)
    assert (carol["jobs"], carol["preemptions"]) == (2, 0)  # the two owner jobs
    # Saved in its grace: nothing lost. Killed at the grace's end: its whole first run (at
    # least the 20 s it ran before the owner came, plus the grace) on 4 GPUs.
    assert alice["gpu_hours_lost"] == 0
    assert dave["gpu_hours_lost"] >= round(GPUS * (20 + GRACE) / 3600, 2) - 0.01
    assert dave["gpu_hours_lost"] <= dave["gpu_hours_run"]
    assert alice["gpu_hours_run"] > 0 and bob["gpu_hours_run"] == 0  # bob asked for no GPU
    for u in (alice, dave):
        assert u["back_median_s"] is not None and 0 < u["back_median_s"] <= 200, u
    assert bob["back_median_s"] is None
    assert accounts["public"]["jobs"] == 2 and accounts["public"]["preemptions"] == 1
    assert accounts["bio"]["preemptions"] == 1 and accounts["chem"]["jobs"] == 2
    assert doc["reasons"] == [{"reason": "owner reclaim", "count": 2}]
    assert doc["jobs"] == 5


def test_filters_by_user_and_account(rc, jobs):
    doc, users, accounts = json_report(rc, "--since", jobs["since"], "--user", "bob")
    assert list(users) == ["bob"] and doc["reasons"] == [] and doc["jobs"] == 1
    doc, users, accounts = json_report(rc, "--since", jobs["since"], "--account", "bio")
    assert list(accounts) == ["bio"] and list(users) == ["dave"]
    assert doc["reasons"] == [{"reason": "owner reclaim", "count": 1}]
    # A user sees the report too (no PrivateData on this cluster).
    doc, users, _ = json_report(rc, "--since", jobs["since"], "--user", "alice", user="alice")
    assert users["alice"]["preemptions"] == 1


def test_csv_and_table_say_the_same(rc, jobs):
    _, users, _ = json_report(rc, "--since", jobs["since"])
    r = report(rc, "--since", jobs["since"], "--format", "csv")
    assert r.returncode == 0 and not r.stderr, r
    rows = list(csv.DictReader(io.StringIO(r.stdout, newline="")))
    by_user = {row["name"]: row for row in rows if row["scope"] == "user"}
    for name, u in users.items():
        row = by_user[name]
        assert int(row["preemptions"]) == u["preemptions"] and int(row["jobs"]) == u["jobs"]
        assert float(row["gpu_hours_lost"]) == u["gpu_hours_lost"]
    assert [(r["name"], r["preemptions"]) for r in rows if r["scope"] == "reason"] == [("owner reclaim", "2")]
    r = report(rc, "--since", jobs["since"])
    assert r.returncode == 0 and not r.stderr, r
    print(r.stdout)
    lines = r.stdout.splitlines()
    assert re.match(r"^project\s+jobs\s+preempted\s+preemptions\s+pauses\s+gpu-h run\s+gpu-h lost\s+"
                    r"refund b-h\s+back p50\s+back p95$", lines[0])
    alice = next(line.split() for line in lines if line.startswith("alice "))
    assert alice[1:5] == ["1", "1", "1", "0"] and alice[6] == "0.00"
    assert lines[-1] == "reasons: by owner reclaim: 2"


def one_error_line(r, status, pattern):
    assert r.returncode == status and not r.stdout, r
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), r.stderr


def test_bad_input_is_one_line_and_non_zero(rc, jobs):
    one_error_line(report(rc, "--format", "xml"), 2, r"^preemptctl: --format is table, csv or json, not 'xml'$")
    r = report(rc, "--bogus")
    assert r.returncode == 2 and not r.stdout and "usage: preemptctl report" in r.stderr, r
    one_error_line(report(rc, "--account", "nosuch"), 1,
                   r"^preemptctl: report: no account 'nosuch' in slurmdbd")
    one_error_line(report(rc, "--since", "2001-01-01", "--until", "2001-01-02"), 1,
                   r"^preemptctl: report: no jobs between 2001-01-01 and 2001-01-02$")
    one_error_line(report(rc, "--user", "nosuchuser"), 1,
                   r"^preemptctl: report: no user 'nosuchuser' here \(sacct: .*Invalid user id")
    one_error_line(report(rc, "--since", "yesterdayish"), 2,
                   r"^preemptctl: report: sacct refused the range yesterdayish to now: .*Invalid time")
    one_error_line(report(rc, "--since", "2001-01-02", "--until", "2001-01-01"), 2,
                   r"^preemptctl: report: sacct refused the range .*is after end time")
    rc.stop_slurmdbd()
    try:
        one_error_line(report(rc, "--since", jobs["since"]), 1,
                       r"^preemptctl: report: slurmdbd did not answer .*try again once slurmdbd runs")
    finally:
        rc.start_slurmdbd()
