#include "report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "units.hpp"

namespace sp {
namespace {

constexpr double kSecondsPerHour = 3600.0;

// Every note of a job's runs, each once, in the order written (the comment is carried from run
// to run, as job_story reads it).
std::vector<StoryNote> job_notes(const JobRun* first, const JobRun* last) {
  std::vector<StoryNote> out;
  std::unordered_set<std::string> seen;
  for (const JobRun* r = first; r != last; ++r) {
    if (r->admin_comment.find("slurm-preempt:") == std::string::npos) continue;
    for (auto& n : parse_story_notes(r->admin_comment)) {
      if (!seen.insert(std::to_string(static_cast<int>(n.kind)) + n.text).second) continue;
      out.push_back(std::move(n));
    }
  }
  return out;
}

// What one job adds to its account's and its user's rows.
struct JobTally {
  uint64_t preemptions = 0;
  uint64_t pauses = 0;
  double gpu_hours_run = 0;
  double gpu_hours_lost = 0;
  double refunded_billing_hours = 0;
  std::vector<int64_t> back_after_s;
};

int64_t run_end(const JobRun& r, int64_t now) { return r.end > 0 ? r.end : now; }

JobTally tally(const JobRun* first, const JobRun* last, int64_t now,
               std::map<std::string, uint64_t>& by_qos) {
  JobTally t;
  for (const JobRun* r = first; r != last; ++r) {
    if (r->start <= 0) continue;
    const int64_t ran = std::max<int64_t>(0, run_end(*r, now) - r->start);
    t.gpu_hours_run += static_cast<double>(ran) * gpus_of_tres(r->alloc_tres) / kSecondsPerHour;
  }
  const auto notes = job_notes(first, last);
  for (std::size_t i = 0; i < notes.size(); ++i) {
    const StoryNote& n = notes[i];
    if (n.kind == NoteKind::Paused) ++t.pauses;
    if (n.kind == NoteKind::Refunded) {
      t.refunded_billing_hours += static_cast<double>(n.billing_s) / kSecondsPerHour;
    }
    if (n.kind != NoteKind::Preempted) continue;
    ++t.preemptions;
    // Why: the reason the watcher noted (owner reclaim, quota reclaim, class); a preemption
    // by Slurm's QOS rules, or one noted before reasons were, by the preemptor's QOS.
    ++by_qos[!n.reason.empty() && n.reason != "qos"
                 ? n.reason
                 : "qos " + (n.qos.empty() ? std::string("?") : n.qos)];
    // The run it hit: the last one started by then.
    const JobRun* hit = nullptr;
    for (const JobRun* r = first; r != last; ++r) {
      if (r->start > 0 && r->start <= n.at) hit = r;
    }
    // How that run ended: saved (exited in its grace, or requeued itself) or not.
    bool saved = false;
    int64_t killed_at = 0;
    for (std::size_t j = i + 1; j < notes.size() && notes[j].kind != NoteKind::Preempted; ++j) {
      const NoteKind k = notes[j].kind;
      if (k == NoteKind::ExitedInGrace || k == NoteKind::ExitedFinished ||
          k == NoteKind::RequeuedByJob) {
        saved = true;
        break;
      }
      if (k == NoteKind::KilledAtGraceEnd) {
        killed_at = notes[j].at;
        break;
      }
    }
    if (hit != nullptr && !saved) {
      const int64_t end = hit->end > 0 ? hit->end : (killed_at > 0 ? killed_at : now);
      const int64_t lost = std::max<int64_t>(0, end - hit->start);
      t.gpu_hours_lost +=
          static_cast<double>(lost) * gpus_of_tres(hit->alloc_tres) / kSecondsPerHour;
    }
    // Back: the first run that started after it.
    for (const JobRun* r = first; r != last; ++r) {
      if (r->start > n.at) {
        t.back_after_s.push_back(r->start - n.at);
        break;
      }
    }
  }
  return t;
}

void add(ReportRow& row, const JobTally& t) {
  ++row.jobs;
  if (t.preemptions > 0) ++row.jobs_preempted;
  row.preemptions += t.preemptions;
  row.pauses += t.pauses;
  row.gpu_hours_run += t.gpu_hours_run;
  row.gpu_hours_lost += t.gpu_hours_lost;
  row.refunded_billing_hours += t.refunded_billing_hours;
  row.back_after_s.insert(row.back_after_s.end(), t.back_after_s.begin(), t.back_after_s.end());
}

std::vector<ReportRow> rows_of(std::map<std::string, ReportRow>& m) {
  std::vector<ReportRow> out;
  out.reserve(m.size());
  for (auto& [name, row] : m) {
    row.name = name;
    out.push_back(std::move(row));
  }
  return out;
}

std::string hours(double h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", h);
  return buf;
}

std::string opt_seconds(const std::optional<int64_t>& s) {
  return s ? std::to_string(*s) : std::string();
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string pad(std::string s, std::size_t width, bool left) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left ? s + fill : fill + s;
}

}  // namespace

uint32_t gpus_of_tres(std::string_view tres) {
  uint32_t untyped = 0;
  uint32_t typed = 0;
  bool has_untyped = false;
  while (!tres.empty()) {
    const auto comma = tres.find(',');
    const std::string_view item = tres.substr(0, comma);
    tres = comma == std::string_view::npos ? std::string_view() : tres.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq);
    const std::string_view v = item.substr(eq + 1);
    uint32_t n = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size()) continue;
    if (key == "gres/gpu") {
      untyped = n;
      has_untyped = true;
    } else if (key.starts_with("gres/gpu:")) {
      typed += n;
    }
  }
  return has_untyped ? untyped : typed;
}

std::optional<int64_t> percentile(std::vector<int64_t> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const auto rank =
      static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  const std::size_t at = std::min(values.size(), std::max<std::size_t>(rank, 1)) - 1;
  return values[at];
}

Report build_report(const std::vector<JobRun>& runs, int64_t now) {
  std::map<std::string, ReportRow> accounts;
  std::map<std::string, ReportRow> users;
  std::map<std::string, uint64_t> by_qos;
  uint64_t pauses = 0;
  Report r;
  for (std::size_t i = 0; i < runs.size();) {
    std::size_t j = i + 1;
    while (j < runs.size() && runs[j].job_id == runs[i].job_id) ++j;
    const JobRun* first = runs.data() + i;
    const JobRun* last = runs.data() + j;
    const JobTally t = tally(first, last, now, by_qos);
    pauses += t.pauses;
    const JobRun& latest = *(last - 1);
    add(accounts[latest.account], t);
    add(users[latest.user], t);
    ++r.jobs;
    i = j;
  }
  r.accounts = rows_of(accounts);
  r.users = rows_of(users);
  for (const auto& [reason, count] : by_qos) r.reasons.push_back({reason, count});
  if (pauses > 0) r.reasons.push_back({"pause", pauses});
  return r;
}

std::string format_report_table(const Report& r) {
  static constexpr std::size_t kNumbers = 9;
  static constexpr const char* kHead[kNumbers] = {"jobs",       "preempted", "preemptions",
                                                  "pauses",     "gpu-h run", "gpu-h lost",
                                                  "refund b-h", "back p50",  "back p95"};
  std::size_t width = 7;  // "project"
  for (const auto& row : r.accounts) width = std::max(width, row.name.size());
  for (const auto& row : r.users) width = std::max(width, row.name.size());
  std::string out;
  const auto section = [&](const char* title, const std::vector<ReportRow>& rows) {
    out += pad(title, width, true);
    for (const char* h : kHead) out += "  " + pad(h, 11, false);
    out += "\n";
    for (const auto& row : rows) {
      const auto med = row.back_median_s();
      const auto p95 = row.back_p95_s();
      const std::string cells[kNumbers] = {
          std::to_string(row.jobs),          std::to_string(row.jobs_preempted),
          std::to_string(row.preemptions),   std::to_string(row.pauses),
          hours(row.gpu_hours_run),          hours(row.gpu_hours_lost),
          hours(row.refunded_billing_hours), med ? format_duration(*med) : "-",
          p95 ? format_duration(*p95) : "-"};
      out += pad(row.name, width, true);
      for (const auto& c : cells) out += "  " + pad(c, 11, false);
      out += "\n";
    }
  };
  section("project", r.accounts);
  out += "\n";
  section("user", r.users);
  out += "\nreasons:";
  if (r.reasons.empty()) out += " none";
  for (std::size_t i = 0; i < r.reasons.size(); ++i) {
    out += (i == 0 ? " " : ", ") + (r.reasons[i].reason == "pause" ? "" : std::string("by ")) +
           r.reasons[i].reason + ": " + std::to_string(r.reasons[i].count);
  }
  return out + "\n";
}

std::string format_report_csv(const Report& r) {
  std::string out =
      "scope,name,jobs,jobs_preempted,preemptions,pauses,gpu_hours_run,gpu_hours_lost,"
      "refunded_billing_hours,back_median_s,back_p95_s\r\n";
  const auto rows = [&](const char* scope, const std::vector<ReportRow>& list) {
    for (const auto& row : list) {
      out += std::string(scope) + "," + csv_field(row.name) + "," + std::to_string(row.jobs) + "," +
             std::to_string(row.jobs_preempted) + "," + std::to_string(row.preemptions) + "," +
             std::to_string(row.pauses) + "," + hours(row.gpu_hours_run) + "," +
             hours(row.gpu_hours_lost) + "," + hours(row.refunded_billing_hours) + "," +
             opt_seconds(row.back_median_s()) + "," + opt_seconds(row.back_p95_s()) + "\r\n";
    }
  };
  rows("account", r.accounts);
  rows("user", r.users);
  for (const auto& reason : r.reasons) {
    out +=
        "reason," + csv_field(reason.reason) + ",,," + std::to_string(reason.count) + ",,,,,,\r\n";
  }
  return out;
}

std::string format_report_json(const Report& r, std::string_view since, std::string_view until) {
  std::string out = "{\"since\":" + json_string(since) + ",\"until\":" + json_string(until) +
                    ",\"jobs\":" + std::to_string(r.jobs);
  const auto rows = [&](const char* key, const std::vector<ReportRow>& list) {
    out += ",\"" + std::string(key) + "\":[";
    for (std::size_t i = 0; i < list.size(); ++i) {
      const ReportRow& row = list[i];
      const auto med = row.back_median_s();
      const auto p95 = row.back_p95_s();
      out += (i == 0 ? "\n" : ",\n");
      out += "{\"name\":" + json_string(row.name) + ",\"jobs\":" + std::to_string(row.jobs) +
             ",\"jobs_preempted\":" + std::to_string(row.jobs_preempted) +
             ",\"preemptions\":" + std::to_string(row.preemptions) +
             ",\"pauses\":" + std::to_string(row.pauses) +
             ",\"gpu_hours_run\":" + hours(row.gpu_hours_run) +
             ",\"gpu_hours_lost\":" + hours(row.gpu_hours_lost) +
             ",\"refunded_billing_hours\":" + hours(row.refunded_billing_hours) +
             ",\"back_median_s\":" + (med ? std::to_string(*med) : std::string("null")) +
             ",\"back_p95_s\":" + (p95 ? std::to_string(*p95) : std::string("null")) + "}";
    }
    out += "]";
  };
  rows("accounts", r.accounts);
  rows("users", r.users);
  out += ",\"reasons\":[";
  for (std::size_t i = 0; i < r.reasons.size(); ++i) {
    out += (i == 0 ? "" : ",") + std::string("{\"reason\":") + json_string(r.reasons[i].reason) +
           ",\"count\":" + std::to_string(r.reasons[i].count) + "}";
  }
  return out + "]}\n";
}

}  // namespace sp
