"""Issue 16.2, `preemptctl report` on the real cluster: alice's job is preempted and saves in
its grace, dave's is preempted and killed at the grace's end, bob's is never preempted; the
report over slurmdbd's records counts them per account and user, in table, csv and json, as
root and filtered (jobs slurmdbd stored without an eligible time too), draws them (--plot, SVG and PNG), and refuses bad input in one line,
leaving no picture behind. Its own cluster (SLURM_PREEMPT_PORT_OFFSET + 710): the
slurmdbd-down case stops slurmdbd."""

import csv
import io
import json
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET

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
    plots = rc.jobs / f"plots-{time.time_ns()}"
    plots.mkdir()
    return {"since": since, "saver": saver, "killed": killed, "never": never, "plots": plots}


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
    # dave's lost run had its fair-share usage refunded (priority.lost_work_charge 0); alice's
    # saved run and bob's were charged.
    assert dave["refunded_billing_hours"] > 0 and accounts["bio"]["refunded_billing_hours"] > 0
    assert alice["refunded_billing_hours"] == 0 and bob["refunded_billing_hours"] == 0
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
                   r"^preemptctl: report: no user 'nosuchuser' here \(getent passwd nosuchuser finds "
                   r"none\): check the name$")
    one_error_line(report(rc, "--since", "yesterdayish"), 2,
                   r"^preemptctl: report: sacct refused the range yesterdayish to now: .*Invalid time")
    one_error_line(report(rc, "--since", "2001-01-02", "--until", "2001-01-01"), 2,
                   r"^preemptctl: report: sacct refused the range .*is after end time")
    rc.stop_slurmdbd()
    try:
        one_error_line(report(rc, "--since", jobs["since"]), 1,
                       r"^preemptctl: report: slurmdbd did not answer .*try again once slurmdbd runs")
        # With --plot: the same line, and no picture (nor a temporary file) left behind.
        out = jobs["plots"] / "down"
        out.mkdir()
        one_error_line(report(rc, "--since", jobs["since"], "--plot", str(out / "r.svg")), 1,
                       r"^preemptctl: report: slurmdbd did not answer .*try again once slurmdbd runs")
        assert list(out.iterdir()) == []
        # The plot path is checked before slurmdbd is asked: its line, not slurmdbd's.
        one_error_line(report(rc, "--since", jobs["since"], "--plot", "/nonexistent-dir/r.svg"), 2,
                       r"^preemptctl: report: cannot write the plot /nonexistent-dir/r.svg: ")
    finally:
        rc.start_slurmdbd()


# --- the picture (--plot) --------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def svg_ids_and_text(path):
    root = ET.parse(path).getroot()  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg", root.tag
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    text = [t.strip() for e in root.iter(f"{SVG}text") for t in e.itertext() if t.strip()]
    return ids, text


def test_plot_svg_draws_every_run_per_node_the_marks_and_the_reports_own_hours(rc, jobs):
    _, users, accounts = json_report(rc, "--since", jobs["since"])
    out = jobs["plots"] / "report.svg"
    r = report(rc, "--since", jobs["since"], "--plot", str(out))
    assert r.returncode == 0 and not r.stderr, r
    assert r.stdout.startswith("project "), r.stdout  # the table still prints
    ids, text = svg_ids_and_text(out)
    print(sorted(i for i in ids if i.startswith(("run-", "preempted-", "resumed-", "gpu-hours-"))))
    saver, killed, never = jobs["saver"], jobs["killed"], jobs["never"]
    runs = lambda job, node: [i for i in ids if i.startswith(f"run-{job}-{node}-")]  # noqa: E731
    # Both runs of each preempted job on the owned node, one row per node; the preemption (on
    # the run it hit) and the resume (the next run's start) marked.
    assert len(runs(saver, NODE)) == 2 and len(runs(killed, NODE)) == 2, ids
    for job in (saver, killed):
        assert [i for i in ids if i.startswith(f"preempted-{job}-{NODE}-")], (job, ids)
        assert [i for i in ids if i.startswith(f"resumed-{job}-{NODE}-")], (job, ids)
    never_node = rc.sacct(never, ["NodeList"])[0]["NodeList"]
    assert len(runs(never, never_node)) == 1, (never_node, ids)
    assert not [i for i in ids if i.startswith((f"preempted-{never}-", f"resumed-{never}-"))]
    assert NODE in text and never_node in text  # the node rows' labels
    for job in (saver, killed, never):
        assert str(job) in text, job  # the bars' labels
    # The per-project chart: the report's numbers, as its table prints them.
    for name, a in accounts.items():
        assert f"gpu-hours-run-{name}" in ids and f"gpu-hours-lost-{name}" in ids, name
        assert f"run {a['gpu_hours_run']:.2f}" in text and f"lost {a['gpu_hours_lost']:.2f}" in text
    assert accounts["bio"]["gpu_hours_lost"] > 0  # dave's killed run: a visible lost bar
    assert [p.name for p in jobs["plots"].iterdir() if p.name.startswith(".")] == []  # no temp file


def test_plot_png_with_json_on_stdout(rc, jobs):
    out = jobs["plots"] / "report.PNG"  # the extension in either case
    r = report(rc, "--since", jobs["since"], "--format", "json", "--plot", str(out))
    assert r.returncode == 0 and not r.stderr, r
    assert json.loads(r.stdout)["jobs"] == 5
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000, len(data)
    # Written again over the old picture: replaced whole.
    r = report(rc, "--since", jobs["since"], "--plot", str(out))
    assert r.returncode == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_bad_input_is_one_line_non_zero_and_leaves_no_file(rc, jobs, tmp_path):
    since = ("--since", jobs["since"])
    one_error_line(report(rc, *since, "--plot", str(tmp_path / "r.pdf")), 2,
                   r"^preemptctl: --plot writes FILE.svg or FILE.png, not '.*/r.pdf'$")
    one_error_line(report(rc, *since, "--plot", str(tmp_path / "r")), 2, r"^preemptctl: --plot writes ")
    one_error_line(report(rc, *since, "--plot", "/nonexistent-dir/r.svg"), 2,
                   r"^preemptctl: report: cannot write the plot /nonexistent-dir/r.svg: "
                   r"/nonexistent-dir: No such file or directory$")
    one_error_line(report(rc, *since, "--plot", "/proc/r.png"), 2,
                   r"^preemptctl: report: cannot write the plot /proc/r.png: /proc: ")
    assert not os.path.exists("/proc/r.png")
    (tmp_path / "d.svg").mkdir()
    one_error_line(report(rc, *since, "--plot", str(tmp_path / "d.svg")), 2,
                   r"^preemptctl: report: cannot write the plot .*/d.svg: it is a directory$")
    one_error_line(report(rc, "--since", "2001-01-01", "--until", "2001-01-02", "--plot",
                          str(tmp_path / "empty.svg")), 1,
                   r"^preemptctl: report: no jobs between 2001-01-01 and 2001-01-02$")
    # matplotlib missing (a stand-in that fails to import, first on the plotter's path).
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    r = subprocess.run([str(PREEMPTCTL), "report", *since, "--plot", str(tmp_path / "m.svg")],
                       env={**rc.env, "PYTHONPATH": str(fake)}, capture_output=True, text=True,
                       timeout=60)
    one_error_line(r, 1, r"^preemptctl: report: cannot draw .*/m.svg: python3-matplotlib is not "
                         r"installed: install it \(apt-get install python3-matplotlib\)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.svg", "fake"]


def test_jobs_that_end_before_slurmdbd_hears_them_start_are_counted(rc, jobs):
    """Slurm 22.05 stores no eligible time for a job that ends before slurmctld has sent its
    start (sacct: Eligible Unknown), and sacct's plain -S/-E range needs one: such jobs went
    missing from the report (bob's one-second job, now and then). erin's one-second jobs, until
    slurmdbd holds one of them so: the report counts every one of them, filtered or not. Last in the module: the
    tests above count the fixture's five jobs."""
    short = []
    for _ in range(10):
        job = rc.sbatch(["-N1", "-p", "public"], "true", user="erin")
        rc.wait_job_state(job, "COMPLETED", timeout=30)
        settled_runs(rc, job, 1)
        short.append(job)
        if rc.sacct(job, ["Eligible"], ["-X"])[0]["Eligible"] == "Unknown":
            break
    else:
        pytest.fail(f"none of {len(short)} one-second jobs was stored without an eligible time")
    # Filtered by user and by account too: slurmdbd holds such a job without a user id or an
    # account in its job row, so sacct -u and -A would leave it out.
    for args in (("--user", "erin"), ("--account", "project-a"), ("--user", "erin", "--account", "project-a")):
        doc, users, accounts = json_report(rc, "--since", jobs["since"], *args)
        assert list(users) == ["erin"] and list(accounts) == ["project-a"], (args, doc)
        assert users["erin"]["jobs"] == len(short) and doc["jobs"] == len(short), (args, short, doc)
    doc, users, _ = json_report(rc, "--since", jobs["since"])
    assert users["erin"]["jobs"] == len(short) and doc["jobs"] == 5 + len(short), (short, doc)
