// preemptctl: the command line of slurm-preempt (doc/preemptctl.1.scd is its man page; the
// usage text below and the man page's SYNOPSIS, COMMANDS and OPTIONS must agree, and
// test/integration/test_docs.py checks that they do).
//
//   check      the policy file, then the running cluster against it (preflight_cmd.cpp)
//   qos-sync   QOS, quota licenses and limits into slurmdbd with sacctmgr (lib/qos_sync.hpp)
//   quotas     GPUs per project from squeue (lib/quota_report.hpp)
//   pause, resume  for users; slurmctld decides (pause_cmd.cpp)
//   finished   inside a job: its work is done, not to be requeued (pause_cmd.cpp)
//   events     one job's story, run by run (events_cmd.cpp over lib/story.hpp)
//   report     preemptions and their cost per project and user (report_cmd.cpp, lib/report.hpp)
//
// The policy defaults to preempt.yaml beside $SLURM_CONF (or /etc/slurm/slurm.conf).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy_loader.hpp"
#include "qos_sync.hpp"
#include "quota.hpp"
#include "quota_report.hpp"
#include "events_cmd.hpp"
#include "pause_cmd.hpp"
#include "preflight_cmd.hpp"
#include "report_cmd.hpp"
#include "run.hpp"
#include "story_source.hpp"
#include "version.hpp"

namespace {

using sp::tool::first_line;

constexpr const char* kUsage =
    "usage: preemptctl check [--policy FILE] [--policy-only]\n"
    "       preemptctl qos-sync [--policy FILE] [--dry-run]\n"
    "       preemptctl quotas [--policy FILE] [--parsable]\n"
    "       preemptctl pause JOB... [--grace DURATION] [--user U] [--account A]\n"
    "       preemptctl resume JOB... [--user U] [--account A]\n"
    "       preemptctl finished [JOB]\n"
    "       preemptctl events JOB [--json] [--policy FILE]\n"
    "       preemptctl report [--since T] [--until T] [--account A] [--user U] [--format F] "
    "[--plot FILE] [--policy FILE]\n"
    "       preemptctl --help | --version\n";

constexpr const char* kHelp =
    "commands:\n"
    "  check          validate the policy, then check the running cluster against it: one\n"
    "                 line per problem with its fix; exit 0 when the cluster is ready\n"
    "  qos-sync       create or update the policy's QOS (and quota licenses and limits) in\n"
    "                 slurmdbd with sacctmgr; prints each change; idempotent\n"
    "  quotas         GPUs per project and pool: quota, limit, used, non-preemptible,\n"
    "                 borrowed, pending\n"
    "  pause          give jobs their checkpoint signal and grace, then requeue them held\n"
    "  resume         release paused jobs\n"
    "  finished       inside a job: its work is done, so an exit 0 during a grace ends it\n"
    "                 instead of requeueing it (JOB defaults to $SLURM_JOB_ID)\n"
    "  events         one job's story, run by run: submitted, started, preempted (by which\n"
    "                 job), checkpoint signal, exited or killed, requeued, paused, resumed\n"
    "  report         per project and user over slurmdbd's records: jobs, jobs preempted,\n"
    "                 preemptions, pauses, GPU-hours run and lost, time back after a\n"
    "                 preemption (median, p95); preemptions per preemptor QOS\n"
    "options:\n"
    "  --policy FILE  the policy (default: preempt.yaml beside $SLURM_CONF, else\n"
    "                 /etc/slurm/preempt.yaml)\n"
    "  --policy-only  check: the policy file alone, not the cluster\n"
    "  --dry-run      qos-sync: print what would change, change nothing\n"
    "  --parsable     quotas: a header project|pool|quota|limit|used|nonpreemptible|\n"
    "                 borrowed|pending, then one '|'-separated line per project and pool\n"
    "  --grace DURATION  pause: a grace shorter than the job's own (never longer)\n"
    "  --user U       pause, resume: every job of user U; report: only user U's jobs\n"
    "  --account A    pause, resume: every job of account A; report: only account A\n"
    "  --json         events: one JSON document instead of one line per event\n"
    "  --since T      report: from T (what sacct -S takes; default now-7days)\n"
    "  --until T      report: to T (what sacct -E takes; default now)\n"
    "  --format F     report: table (default), csv or json\n"
    "  --plot FILE    report: also draw it into FILE.svg or FILE.png (needs matplotlib):\n"
    "                 a timeline per node and GPU-hours run and lost per project\n"
    "  --help         this text\n"
    "  --version      the version of slurm-preempt\n"
    "See preemptctl(1), preempt.yaml(5) and slurm-preempt(8).\n";

// Runs sacctmgr -i with argv; false (and one line on stderr) when it fails.
bool sacctmgr(std::vector<std::string> argv, const std::string& subject) {
  argv.insert(argv.begin(), {"sacctmgr", "-i"});
  auto r = sp::tool::run(argv);
  // sacctmgr reports a rejected value on stderr and may still exit 0.
  if (r.status != 0 || r.err.find("error:") != std::string::npos) {
    std::fprintf(stderr, "preemptctl: sacctmgr %s for %s failed: %s\n", argv[2].c_str(),
                 subject.c_str(), first_line(r.err + r.out).c_str());
    return false;
  }
  return true;
}

// `sacctmgr -nP <args>`'s output; nullopt (and one line on stderr) when it fails.
std::optional<std::string> show(const std::vector<std::string>& args, const char* what) {
  std::vector<std::string> argv = {"sacctmgr", "-nP"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = sp::tool::run(argv);
  if (r.status != 0) {
    std::fprintf(stderr, "preemptctl: sacctmgr show %s failed: %s\n", what,
                 first_line(r.err + r.out).c_str());
    return std::nullopt;
  }
  return r.out;
}

// ClusterName from `scontrol show config`.
std::optional<std::string> cluster_name() {
  auto r = sp::tool::run({"scontrol", "show", "config"});
  std::string_view out = r.out;
  while (r.status == 0 && !out.empty()) {
    const auto nl = out.find('\n');
    std::string_view line = out.substr(0, nl);
    out = nl == std::string_view::npos ? std::string_view() : out.substr(nl + 1);
    if (line.substr(0, 11) != "ClusterName") continue;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) break;
    line.remove_prefix(eq + 1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
    if (!line.empty()) return std::string(line);
  }
  std::fprintf(stderr, "preemptctl: cannot read ClusterName from scontrol show config: %s\n",
               r.status == 0 ? "not found" : first_line(r.err + r.out).c_str());
  return std::nullopt;
}

int qos_sync(const sp::Policy& p, bool dry_run) {
  const auto shown = show({"show", "qos", "format=" + sp::qos_show_format()}, "qos");
  if (!shown) return 1;
  auto desired = sp::desired_qos(p);
  for (auto& c : sp::desired_class_qos(p)) desired.push_back(std::move(c));
  const auto changes = sp::plan_qos_changes(desired, sp::parse_qos_show(*shown));

  // Quotas: read and plan everything before changing anything, so that an unknown account
  // stops the run with nothing half done.
  std::vector<sp::AdminChange> admin;
  if (!p.quotas.empty()) {
    const auto cluster = cluster_name();
    if (!cluster) return 1;
    const auto resources = show(
        {"show", "resource", "withclusters", "format=" + sp::resource_show_format()}, "resource");
    const auto assocs =
        show({"show", "assoc", "where", "cluster=" + *cluster, "format=" + sp::assoc_show_format()},
             "assoc");
    if (!resources || !assocs) return 1;
    std::string error;
    auto accounts = sp::plan_account_changes(p, *assocs, *cluster, &error);
    if (!error.empty()) {
      std::fprintf(stderr, "preemptctl: %s\n", error.c_str());
      return 1;
    }
    admin = sp::plan_license_changes(p, *resources, *cluster);
    for (auto& a : accounts) admin.push_back(std::move(a));
  }

  const char* suffix = dry_run ? " (dry run)" : "";
  for (const auto& want : desired) {
    bool changed = false;
    for (const auto& c : changes) {
      if (c.qos != want.name) continue;
      changed = true;
      for (const auto& d : c.described)
        std::printf("qos %s: %s%s\n", c.qos.c_str(), d.c_str(), suffix);
      if (dry_run) continue;
      for (const auto& argv : sp::sacctmgr_commands(c)) {
        if (!sacctmgr(argv, "qos " + c.qos)) return 1;
      }
    }
    if (!changed) std::printf("qos %s: up to date\n", want.name.c_str());
  }
  for (const auto& a : admin) {
    std::printf("%s: %s%s\n", a.subject.c_str(), a.described.c_str(), suffix);
    if (!dry_run && !sacctmgr(a.argv, a.subject)) return 1;
  }
  std::printf("preemptctl: %zu of %zu QOS %s", changes.size(), desired.size(),
              dry_run ? "would change" : "changed");
  if (!p.quotas.empty()) {
    std::printf("; %zu quota change%s for %zu project%s", admin.size(),
                admin.size() == 1 ? "" : "s", p.quotas.size(), p.quotas.size() == 1 ? "" : "s");
  }
  std::printf("\n");
  return 0;
}

int quotas(const sp::Policy& p, bool parsable) {
  auto r = sp::tool::run(
      {"squeue", "-h", "-a", "-t", "RUNNING,PENDING", "-O", sp::squeue_quota_format()});
  if (r.status != 0) {
    std::fprintf(stderr, "preemptctl: squeue failed: %s\n", first_line(r.err + r.out).c_str());
    return 1;
  }
  const auto lines = sp::quota_lines(p, sp::parse_squeue_quota(r.out));
  if (lines.empty() && !parsable) {
    std::printf("%s: no quotas\n", p.source.c_str());
    return 0;
  }
  const std::string text =
      parsable ? sp::format_quota_parsable(lines) : sp::format_quota_table(lines);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::printf("%s%s", kUsage, kHelp);
    return 0;
  }
  if (cmd == "--version" || cmd == "-V") {
    std::printf("preemptctl (slurm-preempt) %s\n", sp::kVersion);
    return 0;
  }
  if (cmd == "events") return sp::tool::events_command(argc - 2, argv + 2);
  if (cmd == "report") return sp::tool::report_command(argc - 2, argv + 2);
  if (cmd == "pause" || cmd == "resume") {
    return sp::tool::pause_command(cmd == "resume", argc - 2, argv + 2);
  }
  if (cmd == "finished") return sp::tool::finished_command(argc - 2, argv + 2);
  std::string policy_path = sp::tool::default_policy_path();
  bool dry_run = false;
  bool parsable = false;
  bool policy_only = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--policy" && i + 1 < argc) {
      policy_path = argv[++i];
    } else if (a == "--dry-run" && cmd == "qos-sync") {
      dry_run = true;
    } else if (a == "--parsable" && cmd == "quotas") {
      parsable = true;
    } else if (a == "--policy-only" && cmd == "check") {
      policy_only = true;
    } else {
      std::fprintf(stderr, "preemptctl: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (cmd != "qos-sync" && cmd != "check" && cmd != "quotas") {
    std::fprintf(stderr, "preemptctl: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
  }
  const auto loaded = sp::load_policy_file(policy_path);
  if (const auto* e = sp::error_of(loaded)) {
    std::fprintf(stderr, "preemptctl: %s\n", e->str().c_str());
    return 1;
  }
  const auto policy = sp::policy_of(loaded);
  if (cmd == "quotas") return quotas(*policy, parsable);
  if (cmd == "check") return sp::tool::check_command(*policy, policy_only);
  return qos_sync(*policy, dry_run);
}
