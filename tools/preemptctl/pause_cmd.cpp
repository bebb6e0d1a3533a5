#include "pause_cmd.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "pause.hpp"
#include "run.hpp"
#include "units.hpp"

namespace sp::tool {
namespace {

constexpr const char* kPauseUsage =
    "usage: preemptctl pause JOB... [--grace DURATION] [--user U] [--account A]\n"
    "       preemptctl resume JOB... [--user U] [--account A]\n"
    "  JOB: a job id (an array: all its tasks) or an array task (123_4).\n";

std::string first_line(const std::string& s) {
  const auto start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  return s.substr(start, s.find('\n', start) - start);
}

struct Listed {
  std::string state;
  std::string reason;
};

// squeue -r: one line per job or array task, "ID|STATE|REASON".
std::map<std::string, Listed> list(const std::vector<std::string>& filter) {
  std::vector<std::string> argv = {"squeue", "-h", "-r", "-t", "all", "-o", "%i|%T|%r"};
  argv.insert(argv.end(), filter.begin(), filter.end());
  std::map<std::string, Listed> out;
  const RunResult r = run(argv);
  std::string_view text = r.out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto a = line.find('|');
    const auto b = line.find('|', a == std::string_view::npos ? a : a + 1);
    if (a == std::string_view::npos || b == std::string_view::npos) continue;
    out[std::string(line.substr(0, a))] = {std::string(line.substr(a + 1, b - a - 1)),
                                           std::string(line.substr(b + 1))};
  }
  return out;
}

std::string admin_comment(const std::string& id) {
  const RunResult r = run({"scontrol", "-o", "show", "job", id});
  const auto at = r.out.find("AdminComment=");
  if (at == std::string::npos) return "";
  const auto end = r.out.find(" Exit", at);  // the field after it in 22.05's one-line form
  return r.out.substr(at + 13, end == std::string::npos ? std::string::npos : end - at - 13);
}

uint32_t base_id(const std::string& id) {
  return static_cast<uint32_t>(std::stoul(id.substr(0, id.find('_'))));
}

}  // namespace

int pause_command(bool resume, int argc, char** argv) {
  const PauseRequest::Kind kind = resume ? PauseRequest::Kind::Resume : PauseRequest::Kind::Pause;
  PauseRequest req;
  req.kind = kind;
  std::vector<std::string> ids;
  std::string user, account;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--grace" && !resume && i + 1 < argc) {
      const auto g = parse_duration(argv[++i]);
      if (!g || *g < 0) {
        std::fprintf(stderr, "preemptctl: --grace '%s' is not a duration (30s, 2m, 1h)\n", argv[i]);
        return 2;
      }
      req.grace_s = *g;
    } else if (a == "--user" && i + 1 < argc) {
      user = argv[++i];
    } else if (a == "--account" && i + 1 < argc) {
      account = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "preemptctl: unknown argument '%s'\n%s", argv[i], kPauseUsage);
      return 2;
    } else if (!valid_job_id(a)) {
      // Checked for every argument before anything changes: a bad one changes nothing.
      std::fprintf(stderr,
                   "preemptctl: '%s' is not a job id (123, or 123_4 for an array task); "
                   "nothing was changed\n",
                   argv[i]);
      return 2;
    } else {
      ids.emplace_back(a);
    }
  }
  if (ids.empty() && user.empty() && account.empty()) {
    std::fputs(kPauseUsage, stderr);
    return 2;
  }
  // The targets: each named job's tasks (an array: every task), or every pending/running job
  // of --user/--account. squeue lists what this user may see.
  std::vector<std::string> targets;
  int status = 0;
  for (const auto& id : ids) {
    const auto found = list({"-j", id});
    if (found.empty()) {
      std::fprintf(stderr, "preemptctl: job %s: no such job (unknown, or ended long ago)\n",
                   id.c_str());
      status = 1;
      continue;
    }
    for (const auto& [task, l] : found) targets.push_back(task);
  }
  if (!user.empty() || !account.empty()) {
    std::vector<std::string> filter = {"-t", "PENDING,RUNNING"};
    if (!user.empty()) filter.insert(filter.end(), {"-u", user});
    if (!account.empty()) filter.insert(filter.end(), {"-A", account});
    for (const auto& [task, l] : list(filter)) targets.push_back(task);
  }
  // Send every request, then wait for all of them together.
  const std::string comment = encode_pause_request(req);
  std::vector<std::string> sent;
  for (const auto& t : targets) {
    const RunResult r = run({"scontrol", "update", "JobId=" + t, "Comment=" + comment});
    if (r.status == 0) {
      sent.push_back(t);
      continue;
    }
    const std::string said = first_line(r.err + r.out);
    const bool admin_mark = last_pause_mark(admin_comment(t)).admin;
    const PauseError e = pause_error_from_slurm(said, kind, admin_mark);
    if (e == PauseError::None) {
      std::fprintf(stderr, "preemptctl: job %s: slurmctld refused: %s\n", t.c_str(), said.c_str());
    } else {
      const uint32_t base = base_id(t);
      std::string text = pause_error_text(e, base, -1);
      // Name the task, not only its array: "job 123" -> "job 123_4".
      text.replace(0, 4 + std::to_string(base).size(), "job " + t);
      std::fprintf(stderr, "preemptctl: %s\n", text.c_str());
    }
    status = 1;
  }
  // Wait: a pause until each job is held (its grace, noted in AdminComment, plus the requeue),
  // a resume until it is released.
  int64_t wait_s = 30;
  for (const auto& t : sent) {
    if (!resume) {
      const int64_t g = noted_pause_grace(admin_comment(t));
      if (g >= 0 && g + 30 > wait_s) wait_s = g + 30;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  std::map<std::string, Listed> last;
  std::vector<std::string> waiting = sent;
  while (!waiting.empty()) {
    std::string joined;
    for (const auto& t : waiting) joined += (joined.empty() ? "" : ",") + t;
    last = list({"-j", joined});
    std::vector<std::string> still;
    for (const auto& t : waiting) {
      const auto it = last.find(t);
      if (it != last.end() && reached(kind, it->second.state, it->second.reason)) {
        std::printf(resume ? "job %s: resumed (%s)\n"
                           : "job %s: paused (%s; preemptctl resume %s releases it)\n",
                    t.c_str(), it->second.state.c_str(), t.c_str());
      } else {
        still.push_back(t);
      }
    }
    waiting.swap(still);
    if (waiting.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  for (const auto& t : waiting) {
    const auto it = last.find(t);
    std::fprintf(stderr, "preemptctl: job %s: not %s after %lld s (it is %s, %s)\n", t.c_str(),
                 resume ? "released" : "held", static_cast<long long>(wait_s),
                 it == last.end() ? "gone" : it->second.state.c_str(),
                 it == last.end() ? "-" : it->second.reason.c_str());
    status = 1;
  }
  return status;
}

}  // namespace sp::tool
