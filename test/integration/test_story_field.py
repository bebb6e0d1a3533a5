"""Issue 16 item 5, where the story lives: preempt.yaml's story.field. With a foreign value
already in the field (a jobstats-like JSON that root sets, or the user's --comment), a standby
job is preempted by an owner job and requeued: the foreign value is still there, intact, with
the plugins' notes appended after it, and `preemptctl events` and `preemptctl report` read the
story from the same field. For admin_comment (the default) and for comment; system_comment,
which Slurm 22.05's slurmctld never sends to slurmdbd (accounting_storage_slurmdbd.c
jobacct_storage_p_job_complete; 22.05's scontrol cannot even set it), is refused in one line at
reconfigure.
Its own cluster (SLURM_PREEMPT_PORT_OFFSET + 1100), with AccountingStoreFlags=job_comment."""

import json
import re
import time

import pytest

from cluster import PREEMPTCTL, Cluster, apply_policy, policy_installed
from conftest import PORT_OFFSET
from test_events import LINE
from test_owners import owner_policy
from test_report import GRACE, preempted_and_back, submit
from test_restart import SAVES

# jobstats stores "JS1:" and its summary; this one has a ';' inside a string, the plugins'
# name in quotes and, quoted, what looks like a pause mark: none of it is a note of ours.
FOREIGN = ('JS1:{"nodes":{"n3":{"cpus":2,"gpus":{"0":[5,95]}}},"note":"a;b","tool":"slurm-preempt",'
           '"msg":"slurm-preempt: paused by root (admin) at 2026-01-01T00:00:00Z, grace 5 s"}')
COMMENT_POLICY = "story:\n  field: comment\n"


@pytest.fixture(scope="module")
def sf():
    c = Cluster(with_plugins=True, port_offset=PORT_OFFSET + 1100,
                extra_conf="AccountingStoreFlags=job_comment")
    with c:
        with policy_installed(c, *owner_policy(GRACE)):
            yield c


def shown(c, jobid, column):
    """The field as slurmctld shows it (`scontrol show job`: a line of its own), or None."""
    out = c.run(["scontrol", "show", "job", str(jobid)]).stdout
    m = re.search(rf"^\s+{column}=(.*?) ?$", out, re.M)
    return m.group(1) if m else None


def runs_of(c, jobid, column):
    """Each run's value of the field as slurmdbd keeps it (sacct -D), in run order."""
    out = c.run(["sacct", "-n", "-P", "-D", "-X", "--delimiter=\x1f", "-j", str(jobid),
                 f"--format=JobID,State,{column}"]).stdout
    return [line.split("\x1f") for line in out.splitlines() if line]


def events(c, jobid, user):
    r = c.run([str(PREEMPTCTL), "events", str(jobid)], user=user, check=False, timeout=60)
    assert r.returncode == 0 and not r.stderr, r
    print(r.stdout)
    return [m.groups() for m in map(LINE.match, r.stdout.splitlines()) if m]


def report(c, since, user):
    r = c.run([str(PREEMPTCTL), "report", "--since", since, "--user", user, "--format", "json"],
              check=False, timeout=60)
    assert r.returncode == 0 and not r.stderr, r
    return {u["name"]: u for u in json.loads(r.stdout)["users"]}


def story_checks(c, victim, user, since, column):
    """The foreign value first and intact in every run, our notes after it, events and report
    reading them."""
    now = shown(c, victim, column)
    assert now is not None and now.startswith(FOREIGN + " slurm-preempt: "), now
    assert now.count(FOREIGN) == 1, now
    assert re.search(r" slurm-preempt: preempted at \S+ by JobId=\d+", now), now
    rows = runs_of(c, victim, column)
    assert len(rows) == 2, rows
    for _, _, value in rows:
        assert value.startswith(FOREIGN + " slurm-preempt: ") and value.count(FOREIGN) == 1, rows
    assert "preempted at" in rows[0][2] and "requeued" in rows[0][2], rows
    told = events(c, victim, user)
    assert any(run == "0" and event == "preempted" for _, run, event, _ in told), told
    # Only our notes are told: jobstats' quoted pause is neither a pause nor an unparsed note.
    assert not any(event in ("paused", "unparsed") for _, _, event, _ in told), told
    u = report(c, since, user)[user]
    assert (u["jobs"], u["jobs_preempted"], u["preemptions"], u["pauses"]) == (1, 1, 1, 0), u


def test_admin_comment_keeps_a_jobstats_value_and_tells_the_story_after_it(sf):
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
    victim = submit(sf, SAVES, "alice")
    # As jobstats (or an administrator) would: root replaces the field while the job runs.
    sf.run(["scontrol", "update", f"JobId={victim}", f"AdminComment={FOREIGN}"])
    assert shown(sf, victim, "AdminComment") == FOREIGN
    preempted_and_back(sf, victim)
    story_checks(sf, victim, "alice", since, "AdminComment")


def test_comment_keeps_the_users_comment_and_tells_the_story_after_it(sf):
    apply_policy(sf, owner_policy(GRACE)[0] + COMMENT_POLICY, owner_policy(GRACE)[1])
    try:
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
        ckdir = sf.jobs / f"ckpt-{time.time_ns()}"
        victim = sf.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n3", "-N1",
                            "--exclusive", "--gres=gpu:4", "--time=30", "--open-mode=append",
                            f"--checkpoint-dir={ckdir}", f"--comment={FOREIGN}"], SAVES, user="dave")
        # job_submit's note (when it changed the submission) goes after the user's comment,
        # and nothing into AdminComment.
        first = shown(sf, victim, "Comment")
        assert first == FOREIGN or first.startswith(FOREIGN + " slurm-preempt: "), first
        assert shown(sf, victim, "AdminComment") is None
        preempted_and_back(sf, victim)
        story_checks(sf, victim, "dave", since, "Comment")
        assert all("slurm-preempt" not in admin for _, _, admin in runs_of(sf, victim, "AdminComment"))
    finally:
        apply_policy(sf, *owner_policy(GRACE))


def test_system_comment_is_refused_at_reconfigure_and_the_last_policy_stays(sf):
    mark = len(sf.log("slurmctld"))
    apply_policy(sf, owner_policy(GRACE)[0] + "story:\n  field: system_comment\n",
                 owner_policy(GRACE)[1])
    try:
        log = sf.log("slurmctld")[mark:]
        refused = [line for line in log.splitlines()
                   if "story.field system_comment" in line]
        assert refused and all("cannot load policy: " in line and
                               "never sends a job's SystemComment to slurmdbd" in line and
                               line.endswith("; keeping the last good policy") for line in refused), log
        assert re.search(r"job_submit/preempt: policy in force after reconfigure \(\d+\): \S+, the last good one",
                         log), log
        # The last good policy (admin_comment) goes on: a new submission's note is there.
        ckdir = sf.jobs / f"ckpt-{time.time_ns()}"
        job = sf.sbatch(["--qos=standby", "-p", "standby", "--hold", f"--checkpoint-dir={ckdir}"],
                        "true", user="bob")
        assert "checkpoint USR1" in (shown(sf, job, "AdminComment") or ""), job
        assert shown(sf, job, "SystemComment") is None
        sf.run(["scancel", str(job)])
    finally:
        apply_policy(sf, *owner_policy(GRACE))


def test_with_the_story_in_comment_a_user_cannot_forge_split_or_erase_it(sf):
    """story.field comment: the owner writes the field the plugins read back (a note there is a
    refund of lost work, a pause, a preemption in report). A submission whose comment holds a
    note of ours or a line break is refused in one line; an update of a Comment that holds our
    notes is refused (the notes stay); an operator may still write it."""
    apply_policy(sf, owner_policy(GRACE)[0] + COMMENT_POLICY, owner_policy(GRACE)[1])
    try:
        ckdir = sf.jobs / f"ckpt-{time.time_ns()}"
        args = ["--qos=standby", "-p", "standby", "--hold", f"--checkpoint-dir={ckdir}"]
        forged = ("x slurm-preempt: preempted at 2099-01-01T00:00:00Z by JobId=1: signal USR1, grace 20 s; "
                  "slurm-preempt: killed at grace end 2099-01-01T00:00:20Z, requeued;")
        for comment, why in [(forged, "a comment may not hold a note of slurm-preempt's"),
                             ("line1\nline2", "a comment may not hold a line break")]:
            r = sf.run(["sbatch", *args, f"--comment={comment}"], user="dave", check=False, input="#!/bin/sh\ntrue\n")
            assert r.returncode != 0 and f"sbatch: error: {why}" in r.stderr, r
            assert "(story.field: comment)" in r.stderr and len(r.stderr.strip().splitlines()) <= 2, r.stderr
        job = sf.sbatch(args, "true", user="dave")
        before = shown(sf, job, "Comment")
        assert before and "slurm-preempt: " in before, before
        r = sf.run(["scontrol", "update", f"JobId={job}", "Comment=my words"], user="dave", check=False)
        assert r.returncode != 0 and "Access/permission denied" in r.stderr, r
        assert shown(sf, job, "Comment") == before
        sf.run(["scontrol", "update", f"JobId={job}", "Comment=set by root"])  # an operator may
        assert shown(sf, job, "Comment") == "set by root"
        sf.run(["scancel", str(job)])
    finally:
        apply_policy(sf, *owner_policy(GRACE))
