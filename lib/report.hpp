// preemptctl report: who was preempted, how often, and what it cost, per project (account)
// and per user, over the runs slurmdbd recorded in a time range (`sacct -a -D -X`, read by
// parse_sacct_all in story.hpp). Pure; no Slurm headers. The notes are read with
// parse_story_notes (story.hpp), never parsed again here.
//
// What is counted, per job (all its runs in the range):
//   preemptions   its "preempted at" notes; pauses: its "paused by" notes
//   GPU-hours run the sum over its runs of (end, or `now` while running, minus start) times
//                 the GPUs of AllocTRES (gres/gpu=N; 0 when none)
//   GPU-hours lost for each preemption, the run it hit: 0 when an "exited in time" note
//                 follows it (the job saved and exited in its grace); otherwise the run's time
//                 from its start to its end (or the kill), times its GPUs: no checkpoint of it
//                 is known, so all of it is taken as lost
//   back after    for each preemption, the start of the job's next run minus the preemption
//                 time (preemptions never followed by a run are not counted)
//   refunded      the fair-share usage priority/fairshare gave back for its lost runs
//                 ("fair-share usage refunded" notes), in billing-hours
// The reasons: the one each preemption's note names ("owner reclaim", "quota reclaim",
// "class"); one by Slurm's QOS rules, or noted without a reason, by the preemptor's QOS
// ("qos normal"); plus "pause".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "story.hpp"

namespace sp {

// The GPUs of an AllocTRES value ("cpu=2,mem=1G,node=1,gres/gpu=4"): its gres/gpu=N, or the
// sum of its gres/gpu:TYPE=N when it has no untyped count; 0 when none.
uint32_t gpus_of_tres(std::string_view alloc_tres);

// The nearest-rank percentile (0 < p <= 100) of `values` (any order); nullopt when empty. The
// median of an even count is the lower of the middle two.
std::optional<int64_t> percentile(std::vector<int64_t> values, double p);

struct ReportRow {
  std::string name;  // the account or the user
  uint64_t jobs = 0;
  uint64_t jobs_preempted = 0;
  uint64_t preemptions = 0;
  uint64_t pauses = 0;
  double gpu_hours_run = 0;
  double gpu_hours_lost = 0;
  double refunded_billing_hours = 0;  // fair-share usage given back for lost runs (refund.hpp)
  std::vector<int64_t> back_after_s;  // seconds from each preemption to the next run's start
  std::optional<int64_t> back_median_s() const { return percentile(back_after_s, 50); }
  std::optional<int64_t> back_p95_s() const { return percentile(back_after_s, 95); }
  bool operator==(const ReportRow&) const = default;
};

struct ReportReason {
  std::string reason;  // "owner reclaim", "quota reclaim", "class", "qos normal", "qos ?", "pause"
  uint64_t count = 0;
  bool operator==(const ReportReason&) const = default;
};

struct Report {
  std::vector<ReportRow> accounts;    // by name
  std::vector<ReportRow> users;       // by name
  std::vector<ReportReason> reasons;  // the qos ones by name, then pause
  uint64_t jobs = 0;
};

// The runs of `user` in `account` ("" for any; the account compared as Slurm does, same_name
// in text.hpp). preemptctl report filters here, not with sacct's -u and -A: slurmdbd 22.05
// stores a job that ends before slurmctld has sent its start without a user id or account in
// its job row (the job-end record carries neither; sacct shows both from the association),
// and -u and -A match those columns only, so such a job would be left out.
std::vector<JobRun> runs_of(std::vector<JobRun> runs, std::string_view user,
                            std::string_view account);

// The report of `runs` (parse_sacct_all: grouped by job, each job's runs in order); `now` for
// the runs still going.
Report build_report(const std::vector<JobRun>& runs, int64_t now);

// A table for people: the accounts, then the users, then the reasons.
std::string format_report_table(const Report& r);
// CSV (RFC 4180): a header, then one line per account, user and reason:
// scope,name,jobs,jobs_preempted,preemptions,pauses,gpu_hours_run,gpu_hours_lost,
// refunded_billing_hours,back_median_s,back_p95_s (empty when unknown; a reason's count is in
// preemptions).
std::string format_report_csv(const Report& r);
// One JSON document: {"since":...,"until":...,"jobs":N,"accounts":[...],"users":[...],
// "reasons":[{"reason":"qos owner","count":N}]}.
std::string format_report_json(const Report& r, std::string_view since, std::string_view until);

// ---- the picture (preemptctl report --plot): what it shows, decided here; drawn by
// tools/preemptctl/preempt-plot (matplotlib), which reads format_plot_json's document.

// The format --plot FILE asks for, by FILE's extension (either case): "svg" or "png";
// nullopt for any other (or none).
std::optional<std::string> plot_format(std::string_view path);

// One run of a job on one node (a run on N nodes is N segments).
struct PlotSegment {
  std::string node;
  std::string job_id;
  std::string account;  // the job's account, as its report row counts it (its latest run's)
  std::string user;
  int64_t start = 0;
  int64_t end = 0;      // `now` while it runs
  std::string outcome;  // how the run ended: "saved" or "killed" (a preemption the notes
                        // tell of hit it: saved in its grace or not), "paused", "running",
                        // "completed", "preempted" (Slurm's State PREEMPTED, no note of
                        // ours: neither marked nor counted by the report), or "ended" (any
                        // other end: failed, cancelled, timeout, ...)
  std::string state;    // sacct's State of the run
  uint32_t gpus = 0;
  bool operator==(const PlotSegment&) const = default;
};

// A moment on one node's row: "preempted" or "paused" (on the nodes of the run it hit),
// "resumed" (the start of the job's next run, on its nodes).
struct PlotMark {
  std::string node;
  std::string job_id;
  int64_t at = 0;
  std::string kind;
  bool operator==(const PlotMark&) const = default;
};

struct PlotData {
  std::vector<std::string> nodes;     // every node a run used, in natural order (n2 before n10)
  std::vector<PlotSegment> segments;  // by node, then start
  std::vector<PlotMark> marks;        // by node, then time
  std::vector<ReportRow> accounts;    // the report's rows: GPU-hours run and lost per project
};

// The picture of `runs` (parse_sacct_all), the report `r` built from them (build_report with
// the same `now`): its per-project GPU-hours are the report's own numbers. A NodeList that is
// no hostlist expression is one row as written; runs that never started (or have no nodes)
// are not drawn.
PlotData build_plot(const std::vector<JobRun>& runs, const Report& r, int64_t now);

// One JSON document for the plotter: {"since":...,"until":...,"now":N,"nodes":[...],
// "segments":[{"node","job","account","user","start","end","outcome","state","gpus"}],
// "marks":[{"node","job","at","kind"}],"accounts":[{"name","gpu_hours_run","gpu_hours_lost"}]}
// (GPU-hours as the table prints them, two decimals).
std::string format_plot_json(const PlotData& p, std::string_view since, std::string_view until,
                             int64_t now);

}  // namespace sp
