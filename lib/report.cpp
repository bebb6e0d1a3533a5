#include "report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "text.hpp"
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

// The run a note at `at` hit: the last one started by then; nullptr when none.
const JobRun* run_at(const JobRun* first, const JobRun* last, int64_t at) {
  const JobRun* hit = nullptr;
  for (const JobRun* r = first; r != last; ++r) {
    if (r->start > 0 && r->start <= at) hit = r;
  }
  return hit;
}

// The first run that started after `at`; nullptr when none.
const JobRun* run_after(const JobRun* first, const JobRun* last, int64_t at) {
  for (const JobRun* r = first; r != last; ++r) {
    if (r->start > at) return r;
  }
  return nullptr;
}

// One preemption of a job as its notes tell it: the report's and the plot's only reading.
struct Hit {
  const StoryNote* note = nullptr;
  const JobRun* hit = nullptr;   // the run it hit
  const JobRun* next = nullptr;  // the job's next run (back)
  bool saved = false;            // exited in its grace, or requeued itself
  int64_t lost_end = 0;          // !saved and hit: where the lost run ends
};

std::vector<Hit> preemptions_of(const JobRun* first, const JobRun* last,
                                const std::vector<StoryNote>& notes, int64_t now) {
  std::vector<Hit> out;
  for (std::size_t i = 0; i < notes.size(); ++i) {
    const StoryNote& n = notes[i];
    if (n.kind != NoteKind::Preempted) continue;
    Hit h;
    h.note = &n;
    h.hit = run_at(first, last, n.at);
    h.next = run_after(first, last, n.at);
    int64_t killed_at = 0;
    for (std::size_t j = i + 1; j < notes.size() && notes[j].kind != NoteKind::Preempted; ++j) {
      const NoteKind k = notes[j].kind;
      if (k == NoteKind::ExitedInGrace || k == NoteKind::ExitedFinished ||
          k == NoteKind::RequeuedByJob) {
        h.saved = true;
        break;
      }
      if (k == NoteKind::KilledAtGraceEnd) {
        killed_at = notes[j].at;
        break;
      }
    }
    if (h.hit != nullptr && !h.saved) {
      h.lost_end = h.hit->end > 0 ? h.hit->end : (killed_at > 0 ? killed_at : now);
    }
    out.push_back(h);
  }
  return out;
}

JobTally tally(const JobRun* first, const JobRun* last, int64_t now,
               std::map<std::string, uint64_t>& by_qos) {
  JobTally t;
  for (const JobRun* r = first; r != last; ++r) {
    if (r->start <= 0) continue;
    const int64_t ran = std::max<int64_t>(0, run_end(*r, now) - r->start);
    t.gpu_hours_run += static_cast<double>(ran) * gpus_of_tres(r->alloc_tres) / kSecondsPerHour;
  }
  const auto notes = job_notes(first, last);
  for (const auto& n : notes) {
    if (n.kind == NoteKind::Paused) ++t.pauses;
    if (n.kind == NoteKind::Refunded) {
      t.refunded_billing_hours += static_cast<double>(n.billing_s) / kSecondsPerHour;
    }
  }
  for (const Hit& h : preemptions_of(first, last, notes, now)) {
    ++t.preemptions;
    // Why: the reason the watcher noted (owner reclaim, quota reclaim, class); a preemption
    // by Slurm's QOS rules, or one noted before reasons were, by the preemptor's QOS.
    const StoryNote& n = *h.note;
    ++by_qos[!n.reason.empty() && n.reason != "qos"
                 ? n.reason
                 : "qos " + (n.qos.empty() ? std::string("?") : n.qos)];
    if (h.hit != nullptr && !h.saved) {
      const int64_t lost = std::max<int64_t>(0, h.lost_end - h.hit->start);
      t.gpu_hours_lost +=
          static_cast<double>(lost) * gpus_of_tres(h.hit->alloc_tres) / kSecondsPerHour;
    }
    if (h.next != nullptr) t.back_after_s.push_back(h.next->start - h.note->at);
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

// Natural order of node names: digit runs compare as numbers ("n2" before "n10"); names equal
// that way ("n01", "n1") by their text.
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i;
      std::size_t je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      std::string_view x = a.substr(i, ie - i);
      std::string_view y = b.substr(j, je - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

// The nodes of a run: its NodeList expanded, or as written when it is no hostlist expression.
std::vector<std::string> nodes_of(const JobRun& r) {
  if (r.nodes.empty() || r.nodes == "None assigned") return {};
  auto expanded = expand_hostlist(r.nodes);
  if (!expanded || expanded->empty()) return {r.nodes};
  return *expanded;
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

std::vector<JobRun> runs_of(std::vector<JobRun> runs, std::string_view user,
                            std::string_view account) {
  std::erase_if(runs, [&](const JobRun& r) {
    return (!user.empty() && r.user != user) ||
           (!account.empty() && !same_name(r.account, account));
  });
  return runs;
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

std::optional<std::string> plot_format(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  std::string ext(name.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (ext == "svg" || ext == "png") return ext;
  return std::nullopt;
}

PlotData build_plot(const std::vector<JobRun>& runs, const Report& r, int64_t now) {
  PlotData p;
  p.accounts = r.accounts;
  std::set<std::string> nodes;
  const auto mark = [&](const JobRun* run, int64_t at, const char* kind) {
    if (run == nullptr) return;
    for (auto& node : nodes_of(*run)) p.marks.push_back({std::move(node), run->job_id, at, kind});
  };
  for (std::size_t i = 0; i < runs.size();) {
    std::size_t j = i + 1;
    while (j < runs.size() && runs[j].job_id == runs[i].job_id) ++j;
    const JobRun* first = runs.data() + i;
    const JobRun* last = runs.data() + j;
    const JobRun& latest = *(last - 1);
    const auto notes = job_notes(first, last);
    std::map<const JobRun*, std::string> outcome;
    for (const auto& n : notes) {
      if (n.kind != NoteKind::Paused) continue;
      const JobRun* hit = run_at(first, last, n.at);
      if (hit != nullptr) outcome[hit] = "paused";
      mark(hit, n.at, "paused");
      const JobRun* next = run_after(first, last, n.at);
      mark(next, next != nullptr ? next->start : 0, "resumed");
    }
    for (const Hit& h : preemptions_of(first, last, notes, now)) {
      if (h.hit != nullptr) outcome[h.hit] = h.saved ? "saved" : "killed";
      mark(h.hit, h.note->at, "preempted");
      mark(h.next, h.next != nullptr ? h.next->start : 0, "resumed");
    }
    for (const JobRun* run = first; run != last; ++run) {
      if (run->start <= 0) continue;
      const auto it = outcome.find(run);
      const std::string how = it != outcome.end()         ? it->second
                              : run->end <= 0             ? "running"
                              : run->state == "COMPLETED" ? "completed"
                              : run->state == "PREEMPTED" ? "preempted"
                                                          : "ended";
      for (auto& node : nodes_of(*run)) {
        nodes.insert(node);
        p.segments.push_back({std::move(node), run->job_id, latest.account, latest.user, run->start,
                              run_end(*run, now), how, run->state, gpus_of_tres(run->alloc_tres)});
      }
    }
    i = j;
  }
  p.nodes.assign(nodes.begin(), nodes.end());
  std::sort(p.nodes.begin(), p.nodes.end(), natural_less);
  std::map<std::string, std::size_t> row;
  for (std::size_t k = 0; k < p.nodes.size(); ++k) row[p.nodes[k]] = k;
  std::sort(p.segments.begin(), p.segments.end(), [&](const PlotSegment& a, const PlotSegment& b) {
    return std::tie(row[a.node], a.start, a.job_id) < std::tie(row[b.node], b.start, b.job_id);
  });
  // A mark on a node no drawn run used (a run without a start) has no row: left out.
  std::erase_if(p.marks, [&](const PlotMark& m) { return !row.contains(m.node); });
  std::sort(p.marks.begin(), p.marks.end(), [&](const PlotMark& a, const PlotMark& b) {
    return std::tie(row[a.node], a.at, a.kind, a.job_id) <
           std::tie(row[b.node], b.at, b.kind, b.job_id);
  });
  p.marks.erase(std::unique(p.marks.begin(), p.marks.end()), p.marks.end());
  return p;
}

std::string format_plot_json(const PlotData& p, std::string_view since, std::string_view until,
                             int64_t now) {
  std::string out = "{\"since\":" + json_string(since) + ",\"until\":" + json_string(until) +
                    ",\"now\":" + std::to_string(now) + ",\"nodes\":[";
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    out += (i == 0 ? "" : ",") + json_string(p.nodes[i]);
  }
  out += "],\"segments\":[";
  for (std::size_t i = 0; i < p.segments.size(); ++i) {
    const PlotSegment& s = p.segments[i];
    out += std::string(i == 0 ? "\n" : ",\n") + "{\"node\":" + json_string(s.node) +
           ",\"job\":" + json_string(s.job_id) + ",\"account\":" + json_string(s.account) +
           ",\"user\":" + json_string(s.user) + ",\"start\":" + std::to_string(s.start) +
           ",\"end\":" + std::to_string(s.end) + ",\"outcome\":" + json_string(s.outcome) +
           ",\"state\":" + json_string(s.state) + ",\"gpus\":" + std::to_string(s.gpus) + "}";
  }
  out += "],\"marks\":[";
  for (std::size_t i = 0; i < p.marks.size(); ++i) {
    const PlotMark& m = p.marks[i];
    out += std::string(i == 0 ? "\n" : ",\n") + "{\"node\":" + json_string(m.node) +
           ",\"job\":" + json_string(m.job_id) + ",\"at\":" + std::to_string(m.at) +
           ",\"kind\":" + json_string(m.kind) + "}";
  }
  out += "],\"accounts\":[";
  for (std::size_t i = 0; i < p.accounts.size(); ++i) {
    const ReportRow& a = p.accounts[i];
    out += std::string(i == 0 ? "\n" : ",\n") + "{\"name\":" + json_string(a.name) +
           ",\"gpu_hours_run\":" + hours(a.gpu_hours_run) +
           ",\"gpu_hours_lost\":" + hours(a.gpu_hours_lost) + "}";
  }
  return out + "]}\n";
}

}  // namespace sp
