"""bench/scale.py's bad input (issue 15): a run that cannot start the daemons or reach its job
count says so in one line, which names the failed configuration's work dir (kept: its daemons'
logs), exits 2 and reports no figure, not even those of a configuration that finished before
it. Real daemons, small runs (8 nodes, 100 jobs)."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PORT_OFFSET

REPO = Path(__file__).resolve().parents[2]
SCALE = REPO / "bench" / "scale.py"
# Away from the test clusters' ports (offsets 0..8000 with the worker's), from bench/scale.py's
# and submit_rate.py's defaults (12000, 14000), and below Linux's ephemeral ports (32768 on):
# 26306-27009 on the first worker, 29306-30009 on the second.
HARNESS_PORT_OFFSET = 10000 + PORT_OFFSET
SMALL = ["--nodes", "8", "--accounts", "4", "--jobs", "100", "--scales", "100", "--quiet-jobs", "0",
         "--port-offset", str(HARNESS_PORT_OFFSET)]


def run_scale(tmp_path, *args, timeout=900):
    """bench/scale.py with `args`; its --json goes to tmp_path. Returns (result, json path)."""
    out = tmp_path / "results.json"
    r = subprocess.run([sys.executable, str(SCALE), *SMALL, "--json", str(out), *args],
                       capture_output=True, text=True, timeout=timeout)
    return r, out


def the_error_line(r):
    """The one line the harness ends a failed run with, and the work dir it names as kept."""
    lines = r.stderr.splitlines()
    errors = [line for line in lines if line.startswith("scale: ")]
    assert len(errors) == 1, r.stderr
    # Nothing else names a kept work dir: the cluster's own notice is left to the harness.
    assert not [line for line in lines if line.startswith("cluster work dir kept")], r.stderr
    line = errors[0]
    marker = "is kept: "
    assert marker in line, line
    kept = Path(line[line.index(marker) + len(marker):].rstrip(")"))
    return line, kept


def assert_no_figures(r, out):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert not out.exists(), f"--json was written by a failed run: {out.read_text()[:500]}"
    assert "results written" not in r.stdout, r.stdout
    assert "ours/stock" not in r.stdout and "jobs/s" not in r.stdout, r.stdout
    assert not r.stdout.lstrip().startswith("{"), r.stdout  # --only's JSON dump


def failed_run(tmp_path, kept_dirs, *args, timeout=900):
    """A run that must fail: exit 2, no figure, one error line. Returns (result, that line,
    the work dir it keeps), the dir removed after the test."""
    r, out = run_scale(tmp_path, *args, timeout=timeout)
    assert_no_figures(r, out)
    line, kept = the_error_line(r)
    kept_dirs.append(kept)
    return r, line, kept


@pytest.fixture
def kept_dirs():
    """Work dirs a test's failed runs kept: removed after the test (their daemons are gone)."""
    dirs = []
    yield dirs
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def test_a_scale_run_whose_daemons_cannot_start_says_so_in_one_line_and_reports_no_figure(tmp_path, kept_dirs):
    # An unknown slurm.conf key: Slurm's commands and daemons refuse the file.
    t0 = time.monotonic()
    r, line, kept = failed_run(tmp_path, kept_dirs, "--conf", "NoSuchKey=1", timeout=300)
    assert line.startswith("scale: stock: cannot start the daemons: "), line
    assert "Unable to process configuration file" in line, line
    # The kept dir holds what the failed configuration ran with.
    assert "NoSuchKey=1" in (kept / "etc" / "slurm.conf").read_text()
    # Stock failed first: ours never started (its work dir would be a second one).
    assert "ours:" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert time.monotonic() - t0 < 120


def test_a_scale_run_that_cannot_reach_its_job_count_says_so_in_one_line_and_reports_no_figure(tmp_path, kept_dirs):
    # Slurm's job_submit/throttle refuses the submissions past 60 an hour: the harness, which
    # tries each sbatch 3 times, cannot reach 100 jobs.
    _, line, kept = failed_run(tmp_path, kept_dirs, "--only", "stock", "--conf", "JobSubmitPlugins=throttle",
                               "--scheduler-parameters", "jobs_per_user_per_hour=60", timeout=600)
    assert line.startswith("scale: stock: cannot reach 100 jobs: sbatch failed 3 times: "), line
    assert "Job violates accounting/QOS policy" in line, line
    # The daemons' logs are kept, and they say why: slurmctld refused those submissions.
    assert "Job violates accounting/QOS policy" in (kept / "log" / "slurmctld.log").read_text()


def test_a_scale_run_whose_second_configuration_fails_reports_nothing_of_the_first(tmp_path, kept_dirs):
    # Ours runs first and finishes (a short run: 2 owner jobs, one probe, no recalculation
    # pass: each is a minute); stock is then asked for job_submit/preempt, which Slurm's own
    # plugin dir lacks, so its slurmctld refuses to start. What ours measured must not be
    # printed or written.
    r, line, kept = failed_run(tmp_path, kept_dirs, "--first", "ours", "--conf", "JobSubmitPlugins=preempt",
                               "--preemptions", "2", "--owner-revisit", "10", "--probe-trials", "1",
                               "--passes", "0", "--idle-seconds", "20", "--quiet-seconds", "5",
                               "--query-samples", "1", "--query-span", "0")
    # Ours ran to its end: stock starts only after the configuration before it succeeded.
    assert "ours: waiting for the owner traffic to finish" in r.stderr, r.stderr
    assert "stock: starting 8 nodes" in r.stderr, r.stderr
    assert line.startswith("scale: stock: cannot start the daemons: slurmctld exited"), line
    assert "JobSubmitPlugins=preempt" in (kept / "etc" / "slurm.conf").read_text()
