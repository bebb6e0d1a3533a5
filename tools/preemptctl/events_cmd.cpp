#include "events_cmd.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "pause.hpp"
#include "run.hpp"
#include "story.hpp"
#include "story_source.hpp"

namespace sp::tool {
namespace {

constexpr const char* kEventsUsage = "usage: preemptctl events JOB [--json] [--policy FILE]\n";

bool has(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

// The users of the preempting jobs, from one sacct call; empty when it fails (the story is
// told without them).
std::map<uint32_t, std::string> users_of(const std::vector<uint32_t>& ids) {
  std::map<uint32_t, std::string> out;
  if (ids.empty()) return out;
  std::string list;
  for (const uint32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const RunResult r = run({"sacct", "-X", "-n", "-P", "-j", list, "--format=JobIDRaw,User"});
  std::string_view text = r.out;
  while (r.status == 0 && !text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto bar = line.find('|');
    if (bar == std::string_view::npos || bar + 1 >= line.size()) continue;
    const std::string id(line.substr(0, bar));
    for (const uint32_t want : ids) {
      if (std::to_string(want) == id) out.emplace(want, std::string(line.substr(bar + 1)));
    }
  }
  return out;
}

int events(const std::string& id, bool json, StoryField field) {
  // Every time as epoch seconds, in sacct and scontrol alike.
  setenv("SLURM_TIME_FORMAT", "%s", 1);
  RunResult acct;
  RunResult ctld;
  const std::string delimiter = fresh_sacct_delimiter();
  {
    // slurmdbd and slurmctld are asked at once: the command takes the slower of the two.
    std::thread shown([&] { ctld = run({"scontrol", "show", "job", id}); });
    acct = run({"sacct", "-D", "-X", "-n", "-P", "--delimiter=" + delimiter, "-j", id,
                "--format=" + sacct_format_for(kSacctFormat, field)});
    shown.join();
  }
  if (acct.status != 0 || has(acct.err, "error")) {
    std::fprintf(stderr,
                 "preemptctl: job %s: slurmdbd did not answer (sacct: %s); a job's story is kept "
                 "there: try again once slurmdbd runs (an administrator starts it)\n",
                 id.c_str(), first_line(acct.err + acct.out).c_str());
    return 1;
  }
  const std::vector<JobRun> runs = parse_sacct_runs(acct.out, id, delimiter);
  std::optional<ShownJob> now;
  if (ctld.status == 0) now = parse_shown_job(ctld.out);
  if (now) now->run.admin_comment = shown_story_field(ctld.out, field);  // the story's field
  if (runs.empty() && !now) {
    const bool ctld_down = ctld.status != 0 && !has(ctld.err, "Invalid job id");
    std::fprintf(stderr,
                 ctld_down ? "preemptctl: job %s: slurmdbd has no record of it and slurmctld did "
                             "not answer (%s); check the job id, or try again once slurmctld runs\n"
                           : "preemptctl: job %s: no such job in slurmdbd or slurmctld (%s); "
                             "check the job id (squeue, sacct -X)\n",
                 id.c_str(), ctld_down ? first_line(ctld.err).c_str() : "never submitted?");
    return 1;
  }
  const auto users = users_of(preemptors_named(runs, now));
  const auto story = job_story(runs, now, users);
  const std::string text = json ? format_story_json(id, story) : format_story_table(story);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int events_command(int argc, char** argv) {
  try {
    std::string id;
    bool json = false;
    std::string policy = default_policy_path();
    for (int i = 0; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--json") {
        json = true;
      } else if (a == "--policy" && i + 1 < argc) {
        policy = argv[++i];
      } else if (!a.empty() && a[0] == '-') {
        std::fprintf(stderr, "preemptctl: unknown argument '%s'\n%s", argv[i], kEventsUsage);
        return 2;
      } else if (!id.empty()) {
        std::fprintf(stderr, "preemptctl: events takes one job, not '%s' too\n%s", argv[i],
                     kEventsUsage);
        return 2;
      } else if (!valid_job_id(a)) {
        std::fprintf(stderr, "preemptctl: '%s' is not a job id (123, or 123_4 for an array task)\n",
                     argv[i]);
        return 2;
      } else {
        id = std::string(a);
      }
    }
    if (id.empty()) {
      std::fputs(kEventsUsage, stderr);
      return 2;
    }
    const auto field = story_field_from(policy);
    if (!field) return 1;
    return events(id, json, *field);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "preemptctl: events: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "preemptctl: events: unexpected error\n");
  }
  return 1;
}

}  // namespace sp::tool
