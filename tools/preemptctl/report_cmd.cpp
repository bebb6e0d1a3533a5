#include "report_cmd.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report.hpp"
#include "run.hpp"
#include "story.hpp"
#include "story_source.hpp"

// Makefile.am defines it ($(pkglibexecdir)); the default is for clang-tidy, which compiles
// this file without the Makefile.
#ifndef SP_PKGLIBEXECDIR
#define SP_PKGLIBEXECDIR "/usr/libexec/slurm-preempt"
#endif

namespace sp::tool {
namespace {

constexpr const char* kReportUsage =
    "usage: preemptctl report [--since T] [--until T] [--account A] [--user U] [--format F] "
    "[--plot FILE.svg|FILE.png] [--policy FILE]\n";
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
  std::string plot;  // --plot FILE: "" for none
  std::string policy = default_policy_path();
  StoryField field = StoryField::AdminComment;
};

// The plotter (tools/preemptctl/preempt-plot): beside this program in the build tree; else
// installed, in ../libexec/slurm-preempt from this program's directory (scripts/build-deb
// installs with prefix=/usr over a tree configured for /usr/local, so the configured path
// alone would miss it), else in the configured pkglibexecdir. The installed path when none
// is there, for the message that says it is missing.
std::string plotter() {
  std::vector<std::string> candidates;
  std::array<char, PATH_MAX> self{};
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n > 0) {
    std::string dir(self.data(), static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    candidates.push_back(dir + "preempt-plot");
    candidates.push_back(dir + "../libexec/slurm-preempt/preempt-plot");
  }
  candidates.emplace_back(SP_PKGLIBEXECDIR "/preempt-plot");
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return candidates.size() > 1 ? candidates[1] : candidates[0];
}

// Why --plot FILE cannot be written, or "" when it can: a file is created and removed in its
// directory (what the plotter will do), so a directory that does not exist, is read-only or
// refuses files (/proc) is found before slurmdbd is asked for anything.
std::string unwritable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "it is a directory";
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  std::string probe = dir + "/.preemptctl-plot-XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) return dir + ": " + std::strerror(errno);
  close(fd);
  unlink(probe.c_str());
  return "";
}

// The name of `user` (a name or a uid, as sacct -u takes it) in the passwd database; nullopt
// when it has none.
std::optional<std::string> user_name(const std::string& user) {
  std::array<char, 16384> buf{};
  struct passwd pw {};
  struct passwd* found = nullptr;
  getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (found == nullptr && !user.empty() &&
      user.find_first_not_of("0123456789") == std::string::npos && user.size() < 10) {
    getpwuid_r(static_cast<uid_t>(std::stoul(user)), &pw, buf.data(), buf.size(), &found);
  }
  if (found == nullptr) return std::nullopt;
  return std::string(found->pw_name);
}

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
  std::string user;  // --user as a name: sacct's User column has names
  if (!o.user.empty()) {
    const auto name = user_name(o.user);
    if (!name) {
      std::fprintf(stderr,
                   "preemptctl: report: no user '%s' here (getent passwd %s finds none): check "
                   "the name\n",
                   o.user.c_str(), o.user.c_str());
      return 1;
    }
    user = *name;
  }
  // Every user's and account's jobs, filtered here (runs_of says why not by sacct -u and -A).
  const std::string delimiter = fresh_sacct_delimiter();
  const std::vector<std::string> argv = {
      "sacct", "-D",
      "-X",    "-n",
      "-P",    "--delimiter=" + delimiter,
      "-S",    o.since,
      "-E",    o.until,
      "-s",    std::string(kReportSacctStates),
      "-a",    "--format=" + sacct_format_for(kReportSacctFormat, o.field)};
  const RunResult acct = run(argv);
  if (acct.status != 0 || has(acct.err, "error")) {
    // A time sacct cannot read, or a range that ends before it starts (sacct options.c):
    // the caller's mistake, not slurmdbd's.
    if (has(acct.err, "Invalid time specification") || has(acct.err, "is after end time")) {
      std::fprintf(stderr, "preemptctl: report: sacct refused the range %s to %s: %s\n",
                   o.since.c_str(), o.until.c_str(), first_line(acct.err).c_str());
      return 2;
    }
    dbd_down("sacct", acct);
    return 1;
  }
  const std::vector<JobRun> runs = runs_of(parse_sacct_all(acct.out, delimiter), user, o.account);
  if (runs.empty()) {
    std::fprintf(stderr, "preemptctl: report: no jobs between %s and %s%s%s%s%s\n", o.since.c_str(),
                 o.until.c_str(), o.account.empty() ? "" : " in account ", o.account.c_str(),
                 o.user.empty() ? "" : " of user ", o.user.c_str());
    return 1;
  }
  const auto now = static_cast<int64_t>(std::time(nullptr));
  const Report r = build_report(runs, now);
  if (!o.plot.empty()) {
    // Drawn before anything is printed: a picture that fails leaves one line and no output.
    const std::string json = format_plot_json(build_plot(runs, r, now), o.since, o.until, now);
    const RunResult p = run({plotter(), o.plot}, json);
    if (p.status != 0) {
      const std::string why = first_line(p.err);
      std::fprintf(stderr, "preemptctl: report: cannot draw %s: %s\n", o.plot.c_str(),
                   why.empty() ? "the plotter stopped without saying why" : why.c_str());
      return 1;
    }
  }
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
                           : a == "--plot"    ? &o.plot
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
    if (!o.plot.empty()) {
      if (!plot_format(o.plot)) {
        std::fprintf(stderr, "preemptctl: --plot writes FILE.svg or FILE.png, not '%s'\n",
                     o.plot.c_str());
        return 2;
      }
      const std::string why = unwritable(o.plot);
      if (!why.empty()) {
        std::fprintf(stderr, "preemptctl: report: cannot write the plot %s: %s\n", o.plot.c_str(),
                     why.c_str());
        return 2;
      }
      const std::string p = plotter();
      if (access(p.c_str(), X_OK) != 0) {
        std::fprintf(stderr,
                     "preemptctl: report: --plot needs %s, which is missing: reinstall "
                     "slurm-preempt\n",
                     p.c_str());
        return 1;
      }
    }
    return report(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "preemptctl: report: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "preemptctl: report: unexpected error\n");
  }
  return 1;
}

}  // namespace sp::tool
