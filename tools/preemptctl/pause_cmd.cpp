#include "pause_cmd.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "pause.hpp"
#include "policy_loader.hpp"
#include "run.hpp"
#include "story_source.hpp"
#include "units.hpp"

namespace sp::tool {
namespace {

constexpr const char* kPauseUsage =
    "usage: preemptctl pause JOB... [--grace DURATION] [--user U] [--account A]\n"
    "       preemptctl resume JOB... [--user U] [--account A]\n"
    "  JOB: a job id (an array: all its tasks) or an array task (123_4).\n";

struct Listed {
  std::string state;
  std::string reason;
};

// squeue: "ID|STATE|REASON" per job record (`expand`: per array task). Unexpanded, an array's
// pending tasks that Slurm keeps in one record come as one line, "123_[13-1000]": one
// request (one hold) for all of them, instead of a record split out for each task.
std::map<std::string, Listed> list(const std::vector<std::string>& filter, bool expand = false) {
  std::vector<std::string> argv = {"squeue", "-h", "-t", "all", "-o", "%i|%T|%r"};
  if (expand) argv.push_back("-r");
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
    std::string id(line.substr(0, a));
    if (const auto pct = id.find('%'); pct != std::string::npos && id.back() == ']') {
      id = id.substr(0, pct) + "]";  // "123_[13-1000%4]": the throttle is not part of the id
    }
    out[std::move(id)] = {std::string(line.substr(a + 1, b - a - 1)),
                          std::string(line.substr(b + 1))};
  }
  return out;
}

// Where the story is kept (the policy's story.field); AdminComment, the default, when the
// policy cannot be read: the story only refines a refusal's wording and the wait.
StoryField story_field() {
  const auto loaded = load_policy_file(default_policy_path());
  return error_of(loaded) ? StoryField::AdminComment : policy_of(loaded)->story.field;
}

std::string story_of(const std::string& id, StoryField field) {
  const RunResult r = run({"scontrol", "-o", "show", "job", id});
  return shown_story_field(r.out.substr(0, r.out.find('\n')), field);
}

// Every visible job's story, by id ("123", array tasks "123_4"), from one call.
std::map<std::string, std::string> stories(StoryField where) {
  std::map<std::string, std::string> out;
  const RunResult r = run({"scontrol", "-o", "show", "job"});
  std::string_view text = r.out;
  auto field = [](std::string_view line, std::string_view key) -> std::string_view {
    const auto at = line.find(key);
    if (at == std::string_view::npos || (at > 0 && line[at - 1] != ' ')) return {};
    std::string_view v = line.substr(at + key.size());
    return v.substr(0, v.find(' '));
  };
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string_view array = field(line, "ArrayJobId=");
    const std::string_view task = field(line, "ArrayTaskId=");
    const std::string id = !array.empty() && valid_job_id(task)
                               ? std::string(array) + "_" + std::string(task)
                               : std::string(field(line, "JobId="));
    if (id.empty()) continue;
    out[id] = shown_story_field(line, where);
  }
  return out;
}

// `scontrol update JobId=<id> Comment=<request>`, sent again while slurmctld answers that it
// waits for slurmdbd to record the job (lib/pause.hpp after_refused_update), saying so once.
struct Sent {
  RunResult result;
  bool reported = false;  // a refusal send_request has told the user of already
};
Sent send_request(const std::string& id, const std::string& request) {
  const std::vector<std::string> argv = {"scontrol", "update", "JobId=" + id, "Comment=" + request};
  const auto start = std::chrono::steady_clock::now();
  for (bool said = false;; said = true) {
    RunResult r = run(argv);
    if (r.status == 0) return {r};
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    switch (after_refused_update(first_line(r.err + r.out), waited)) {
      case RefusedUpdate::Report: return {r};  // the caller reports it, as any refusal
      case RefusedUpdate::GiveUp:
        std::fprintf(stderr, "preemptctl: %s\n", send_again_text(id, waited / 1000, true).c_str());
        return {r, true};
      case RefusedUpdate::SendAgain: break;
    }
    if (!said) {
      std::fprintf(stderr, "preemptctl: %s\n",
                   send_again_text(id, kUpdateRetryBudgetMs / 1000, false).c_str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kUpdateRetryWaitMs));
  }
}

// The base job id of "123", "123_4" or "123_[5-9]".
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
  // Send every request (8 at a time: one scontrol each, so a 1000-task array takes seconds,
  // not minutes), then wait for all of them together.
  const std::string comment = encode_pause_request(req);
  std::vector<Sent> results(targets.size());
  {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    const std::size_t n = std::min<std::size_t>(8, targets.size());
    for (std::size_t w = 0; w < n; ++w) {
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < targets.size(); i = next++) {
          results[i] = send_request(targets[i], comment);
        }
      });
    }
    for (auto& w : workers) w.join();
  }
  const StoryField field = story_field();
  std::vector<std::string> sent;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string& t = targets[i];
    const RunResult& r = results[i].result;
    if (r.status == 0) {
      sent.push_back(t);
      continue;
    }
    if (results[i].reported) {
      status = 1;
      continue;
    }
    const std::string said = first_line(r.err + r.out);
    const bool admin_mark = last_pause_mark(story_of(t, field)).admin;
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
  // Wait: a pause until each job is held (its grace, noted in its story, plus the requeue),
  // a resume until it is released.
  int64_t wait_s = 30;
  if (!resume && !sent.empty()) {
    const auto comments = stories(field);
    for (const auto& t : sent) {
      const auto it = comments.find(t);
      const int64_t g = it == comments.end() ? -1 : noted_pause_grace(it->second);
      if (g >= 0 && g + 30 > wait_s) wait_s = g + 30;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  std::map<std::string, Listed> last;
  std::vector<std::string> waiting = sent;
  while (!waiting.empty()) {
    std::string joined;  // the jobs (arrays) they belong to: squeue takes no task ranges
    std::vector<uint32_t> bases;
    bases.reserve(waiting.size());
    for (const auto& t : waiting) bases.push_back(base_id(t));
    std::sort(bases.begin(), bases.end());
    bases.erase(std::unique(bases.begin(), bases.end()), bases.end());
    for (const uint32_t b : bases) joined += (joined.empty() ? "" : ",") + std::to_string(b);
    last = list({"-j", joined}, true);
    std::vector<std::string> still;
    for (const auto& t : waiting) {
      // Every task of the record asked for ("123_[13-1000]": 988 of them) reached the state.
      const auto tasks = expand_array_id(t);
      const Listed* seen = nullptr;
      bool done = !tasks.empty();
      for (const auto& task : tasks) {
        const auto it = last.find(task);
        if (it == last.end() || !reached(kind, it->second.state, it->second.reason)) {
          done = false;
          break;
        }
        seen = &it->second;
      }
      if (done && seen != nullptr) {
        std::printf(resume ? "job %s: resumed (%s)\n"
                           : "job %s: paused (%s; preemptctl resume %s releases it)\n",
                    t.c_str(), seen->state.c_str(), t.c_str());
      } else {
        still.push_back(t);
      }
    }
    waiting.swap(still);
    if (waiting.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  for (const auto& t : waiting) {
    const auto tasks = expand_array_id(t);
    const auto it = tasks.empty() ? last.end() : last.find(tasks.front());
    std::fprintf(stderr, "preemptctl: job %s: not %s after %lld s (it is %s, %s)\n", t.c_str(),
                 resume ? "released" : "held", static_cast<long long>(wait_s),
                 it == last.end() ? "gone" : it->second.state.c_str(),
                 it == last.end() ? "-" : it->second.reason.c_str());
    status = 1;
  }
  return status;
}

int finished_command(int argc, char** argv) {
  constexpr const char* kFinishedUsage =
      "usage: preemptctl finished [JOB]\n"
      "  JOB: a job id (default: $SLURM_JOB_ID, the job this runs in).\n";
  std::string id;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((!a.empty() && a[0] == '-') || !id.empty()) {
      std::fprintf(stderr, "preemptctl: unknown argument '%s'\n%s", argv[i], kFinishedUsage);
      return 2;
    }
    id = a;
  }
  if (id.empty()) {
    const char* env = std::getenv("SLURM_JOB_ID");
    if (env == nullptr || *env == '\0') {
      std::fprintf(stderr,
                   "preemptctl: finished needs a job id: run it inside the job (it reads "
                   "SLURM_JOB_ID) or name the job\n%s",
                   kFinishedUsage);
      return 2;
    }
    id = env;
  }
  if (!valid_job_id(id)) {
    std::fprintf(stderr, "preemptctl: '%s' is not a job id (123, or 123_4 for an array task)\n",
                 id.c_str());
    return 2;
  }
  PauseRequest req;
  req.kind = PauseRequest::Kind::Finished;
  const Sent sent = send_request(id, encode_pause_request(req));
  const RunResult& r = sent.result;
  if (r.status != 0) {
    if (sent.reported) return 1;
    const std::string said = first_line(r.err + r.out);
    const PauseError e = pause_error_from_slurm(said, req.kind, false);
    if (e == PauseError::None) {
      std::fprintf(stderr, "preemptctl: job %s: slurmctld refused: %s\n", id.c_str(), said.c_str());
    } else {
      std::string text = pause_error_text(e, base_id(id), -1);
      text.replace(0, 4 + std::to_string(base_id(id)).size(), "job " + id);
      std::fprintf(stderr, "preemptctl: %s\n", text.c_str());
    }
    return 1;
  }
  std::printf(
      "job %s: finished: should it exit 0 during a preemption's or pause's grace, it ends "
      "and is not requeued\n",
      id.c_str());
  return 0;
}

}  // namespace sp::tool
