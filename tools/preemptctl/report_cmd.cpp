#include "report_cmd.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "report.hpp"
#include "run.hpp"
#include "story.hpp"
#include "story_source.hpp"

namespace sp::tool {
namespace {

constexpr const char* kReportUsage =
    "usage: preemptctl report [--since T] [--until T] [--account A] [--user U] [--format F] "
    "[--policy FILE]\n";
constexpr const char* kDefaultSince = "now-7days";

bool has(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

void dbd_down(const char* what, const RunResult& r) {
  std::fprintf(stderr,
               "preemptctl: report: slurmdbd did not answer (%s: %s); the report is made from "
               "its records: try again once slurmdbd runs\n",
               what, first_line(r.err + r.out).c_str());
}

struct Options {
  std::string since = kDefaultSince;
  std::string until = "now";
  std::string account;
  std::string user;
  std::string format = "table";
  std::string policy = default_policy_path();
  StoryField field = StoryField::AdminComment;
};

int report(const Options& o) {
  setenv("SLURM_TIME_FORMAT", "%s", 1);
  if (!o.account.empty()) {
    const RunResult a = run({"sacctmgr", "-nP", "show", "account", o.account, "format=Account"});
    if (a.status != 0 || has(a.err, "error")) {
      dbd_down("sacctmgr show account", a);
      return 1;
    }
    if (first_line(a.out).empty()) {
      std::fprintf(stderr,
                   "preemptctl: report: no account '%s' in slurmdbd (sacctmgr show account)\n",
                   o.account.c_str());
      return 1;
    }
  }
  std::vector<std::string> argv = {"sacct",
                                   "-D",
                                   "-X",
                                   "-n",
                                   "-P",
                                   std::string("--delimiter=") + kSacctDelimiter,
                                   "-S",
                                   o.since,
                                   "-E",
                                   o.until,
                                   "--format=" + sacct_format_for(kReportSacctFormat, o.field)};
  if (o.user.empty()) {
    argv.emplace_back("-a");
  } else {
    argv.insert(argv.end(), {"-u", o.user});
  }
  if (!o.account.empty()) argv.insert(argv.end(), {"-A", o.account});
  const RunResult acct = run(argv);
  if (acct.status != 0 || has(acct.err, "error")) {
    // A time sacct cannot read, or a range that ends before it starts (sacct options.c):
    // the caller's mistake, not slurmdbd's.
    if (has(acct.err, "Invalid time specification") || has(acct.err, "is after end time")) {
      std::fprintf(stderr, "preemptctl: report: sacct refused the range %s to %s: %s\n",
                   o.since.c_str(), o.until.c_str(), first_line(acct.err).c_str());
      return 2;
    }
    if (has(acct.err, "Invalid user id")) {
      std::fprintf(stderr, "preemptctl: report: no user '%s' here (sacct: %s)\n", o.user.c_str(),
                   first_line(acct.err).c_str());
      return 1;
    }
    dbd_down("sacct", acct);
    return 1;
  }
  const std::vector<JobRun> runs = parse_sacct_all(acct.out);
  if (runs.empty()) {
    std::fprintf(stderr, "preemptctl: report: no jobs between %s and %s%s%s%s%s\n", o.since.c_str(),
                 o.until.c_str(), o.account.empty() ? "" : " in account ", o.account.c_str(),
                 o.user.empty() ? "" : " of user ", o.user.c_str());
    return 1;
  }
  const Report r = build_report(runs, static_cast<int64_t>(std::time(nullptr)));
  const std::string text = o.format == "json"  ? format_report_json(r, o.since, o.until)
                           : o.format == "csv" ? format_report_csv(r)
                                               : format_report_table(r);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int report_command(int argc, char** argv) {
  try {
    Options o;
    for (int i = 0; i < argc; ++i) {
      const std::string_view a = argv[i];
      std::string* value = a == "--since"     ? &o.since
                           : a == "--until"   ? &o.until
                           : a == "--account" ? &o.account
                           : a == "--user"    ? &o.user
                           : a == "--format"  ? &o.format
                           : a == "--policy"  ? &o.policy
                                              : nullptr;
      if (value == nullptr) {
        std::fprintf(stderr, "preemptctl: unknown argument '%s'\n%s", argv[i], kReportUsage);
        return 2;
      }
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::fprintf(stderr, "preemptctl: %s needs a value\n%s", argv[i], kReportUsage);
        return 2;
      }
      *value = argv[++i];
    }
    if (o.format != "table" && o.format != "csv" && o.format != "json") {
      std::fprintf(stderr, "preemptctl: --format is table, csv or json, not '%s'\n",
                   o.format.c_str());
      return 2;
    }
    const auto field = story_field_from(o.policy);
    if (!field) return 1;
    o.field = *field;
    return report(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "preemptctl: report: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "preemptctl: report: unexpected error\n");
  }
  return 1;
}

}  // namespace sp::tool
