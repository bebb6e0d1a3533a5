#include "story.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <tuple>

#include "checkpoint.hpp"
#include "pause_mark.hpp"
#include "quota.hpp"
#include "refund.hpp"
#include "scan.hpp"
#include "story_field.hpp"
#include "text.hpp"
#include "units.hpp"

namespace sp {
namespace {

constexpr std::string_view kMark = kNoteMark;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

using scan::eat;
using scan::eat_time;
using scan::number;
using scan::upto;

// ", requeued as restart N" | ", requeued held as restart N (paused)" | `otherwise` (the text
// the writer puts when there is no requeue).
bool eat_requeue(std::string_view s, std::string_view otherwise, StoryNote& n) {
  if (s == otherwise) return true;
  if (eat(s, ", requeued held as restart ")) {
    n.held = true;
    if (!s.ends_with(" (paused)")) return false;
    s.remove_suffix(9);
  } else if (!eat(s, ", requeued as restart ")) {
    return false;
  }
  const auto r = number<uint32_t>(s);
  if (!r) return false;
  n.requeued = true;
  n.restart = *r;
  return true;
}

// "by NAME[ (admin)] at TIME" -> who, admin, at; the rest stays in `s`.
bool eat_who_at(std::string_view& s, StoryNote& n) {
  const auto who = upto(s, " at ");
  if (!who || who->empty()) return false;
  std::string_view w = *who;
  constexpr std::string_view kAdmin = " (admin)";
  n.admin = w.ends_with(kAdmin);
  if (n.admin) w.remove_suffix(kAdmin.size());
  n.who = std::string(w);
  const auto at = eat_time(s);
  if (!at) return false;
  n.at = *at;
  return true;
}

// The fields of one note (its text after "slurm-preempt: "), or false. Loose on its own: the
// caller keeps only what the writer writes back identically.
bool read_note(std::string_view s, StoryNote& n) {
  if (s.starts_with("preempted at ")) {
    n.kind = NoteKind::Preempted;
    const auto p = parse_note_preempted(s);
    if (!p) return false;
    n.at = p->at;
    n.by_job = p->by_job;
    n.qos = p->qos;
    n.account = p->account;
    n.reason = p->reason;
    n.signal = p->signal;
    n.grace_s = p->grace_s;
    return true;
  }
  if (eat(s, "exited in time at ")) {
    n.kind = NoteKind::ExitedInGrace;
    const auto at = eat_time(s);
    if (!at) return false;
    n.at = *at;
    if (s == " (exit 0), finished: not requeued") {
      n.kind = NoteKind::ExitedFinished;
      return true;
    }
    if (!eat(s, " (exit ")) return false;
    const auto status = upto(s, ")");
    const auto e = status ? number<int>(*status) : std::nullopt;
    if (!e) return false;
    n.exit_status = *e;
    return eat_requeue(s, ", not requeued (no --requeue)", n);
  }
  if (eat(s, "killed at grace end ")) {
    n.kind = NoteKind::KilledAtGraceEnd;
    const auto at = eat_time(s);
    if (!at) return false;
    n.at = *at;
    return eat_requeue(s, ", cancelled (no --requeue)", n);
  }
  if (eat(s, "requeued by the job itself (scontrol requeue) as restart ")) {
    n.kind = NoteKind::RequeuedByJob;
    const auto r = number<uint32_t>(s);
    if (!r) return false;
    n.requeued = true;
    n.restart = *r;
    return true;
  }
  if (eat(s, "requeued at its pause's grace end, held as restart ")) {
    n.kind = NoteKind::RequeuedAtPauseEnd;
    if (!s.ends_with(" (paused)")) return false;
    const auto r = number<uint32_t>(s.substr(0, s.size() - 9));
    if (!r) return false;
    n.requeued = n.held = true;
    n.restart = *r;
    return true;
  }
  if (s == note_run_lost_paused()) {
    n.kind = NoteKind::RunLost;
    n.held = true;
    return true;
  }
  if (eat(s, "paused by ")) {
    n.kind = NoteKind::Paused;
    if (!eat_who_at(s, n)) return false;
    if (s == ", held while pending") return true;
    if (!eat(s, ", grace ") || !s.ends_with(" s")) return false;
    const auto g = number<int64_t>(s.substr(0, s.size() - 2));
    if (!g) return false;
    n.grace_s = *g;
    return true;
  }
  if (eat(s, "resumed by ")) {
    n.kind = NoteKind::Resumed;
    return eat_who_at(s, n) && s.empty();
  }
  if (eat(s, "finished by ")) {
    n.kind = NoteKind::Finished;
    return eat_who_at(s, n) && s == ": not requeued if it exits 0 in a grace";
  }
  if (eat(s, "fair-share usage refunded at ")) {
    n.kind = NoteKind::Refunded;
    const auto at = eat_time(s);
    if (!at || !eat(s, ": ")) return false;
    n.at = *at;
    const auto billing = upto(s, " billing-s of a run lost at its grace end (lost_work_charge ");
    const auto b = billing ? number<int64_t>(*billing) : std::nullopt;
    if (!b || !s.ends_with(")")) return false;
    n.billing_s = *b;
    s.remove_suffix(1);
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n.charge);
    return ec == std::errc() && p == s.data() + s.size();
  }
  if (eat(s, "protected from preemption until ")) {
    n.kind = NoteKind::Protected;
    const auto until = eat_time(s);
    if (!until || !eat(s, ": preempted ")) return false;
    n.until = *until;
    const auto count = upto(s, " times within ");
    const auto window = upto(s, " s, taken as a victim last");
    const auto cn = count ? number<uint32_t>(*count) : std::nullopt;
    const auto w = window ? number<int64_t>(*window) : std::nullopt;
    if (!cn || !w || !s.empty()) return false;
    n.count = *cn;
    n.window_s = *w;
    return true;
  }
  return false;
}

// What the writer of `n`'s kind writes for its fields.
std::string written(const StoryNote& n) {
  switch (n.kind) {
    case NoteKind::Preempted: {
      JobCheckpoint c;
      c.signal = n.signal;
      c.grace_s = n.grace_s;
      return note_preempted(n.at, n.by_job, n.qos, n.account, c, n.reason);
    }
    case NoteKind::ExitedInGrace:
      return note_exited_in_grace(n.at, n.exit_status, n.requeued, n.restart, n.held);
    case NoteKind::KilledAtGraceEnd:
      return note_killed_at_grace_end(n.at, n.requeued, n.restart, n.held);
    case NoteKind::RequeuedByJob: return note_requeued_by_job(n.restart);
    case NoteKind::RequeuedAtPauseEnd: return note_requeued_at_pause_end(n.restart);
    case NoteKind::RunLost: return note_run_lost_paused();
    case NoteKind::Paused: return note_paused(n.who, n.admin, n.at, n.grace_s);
    case NoteKind::Resumed: return note_resumed(n.who, n.admin, n.at);
    case NoteKind::Finished: return note_finished(n.who, n.admin, n.at);
    case NoteKind::ExitedFinished: return note_exited_finished(n.at);
    case NoteKind::Protected: {
      Starvation s;
      s.recent = n.count;
      s.until = n.until;
      StarvationPolicy p;
      p.window_s = n.window_s;
      return note_protected(s, p);
    }
    case NoteKind::Refunded: return note_refunded(n.at, n.billing_s, n.charge);
    case NoteKind::Submission:
    case NoteKind::Unparsed: break;
  }
  return {};
}

// The items job_submit writes in its one note of a submission (submit_adapter.cpp apply()).
bool submission_item(std::string_view s) {
  return s.starts_with("qos ") || s.starts_with("partition ") || s.starts_with("requeue ") ||
         s.starts_with("checkpoint ") || s.starts_with("license +");
}

}  // namespace

std::vector<StoryNote> parse_story_notes(std::string_view comment) {
  std::vector<StoryNote> out;
  bool in_submission = false;  // the last segment was an item of job_submit's note
  while (!comment.empty()) {
    const auto semi = comment.find(';');
    const std::string_view raw = comment.substr(0, semi);
    comment = semi == std::string_view::npos ? std::string_view() : comment.substr(semi + 1);
    const std::string_view seg = trim(raw);
    // Ours from the mark on: at the segment's start, or after an administrator's text that
    // did not end in ';' (add_admin_note appends " slurm-preempt: NOTE;").
    std::size_t mark = seg.starts_with(kMark) ? 0 : seg.find(" " + std::string(kMark));
    if (mark != std::string_view::npos && mark != 0) ++mark;
    if (in_submission && submission_item(seg)) mark = std::string_view::npos;
    std::string_view body = mark == std::string_view::npos ? seg : seg.substr(mark);
    if (!eat(body, kMark)) {
      // Not ours, unless it continues job_submit's note ("slurm-preempt: qos a->b; requeue on;").
      if (in_submission && submission_item(seg)) {
        out.back().text += "; " + std::string(seg);
      } else {
        in_submission = false;
      }
      continue;
    }
    body = trim(body);
    StoryNote n;
    in_submission = false;
    if (submission_item(body)) {
      n.kind = NoteKind::Submission;
      n.text = std::string(body);
      in_submission = true;
      out.push_back(std::move(n));
      continue;
    }
    if (!read_note(body, n) || written(n) != body) {
      n = StoryNote{};
      n.kind = NoteKind::Unparsed;
    }
    n.text = std::string(body);
    out.push_back(std::move(n));
  }
  return out;
}

// ---- Slurm's records ---------------------------------------------------------------------

namespace {

int64_t epoch_field(std::string_view s) {
  const auto v = number<int64_t>(trim(s));
  return v && *v > 0 ? *v : 0;
}

std::string first_word(std::string_view s) {
  s = trim(s);
  return std::string(s.substr(0, s.find(' ')));
}

// `s` cut at each `delim`, into at most `max_fields` fields (the last one takes the rest).
std::vector<std::string_view> split(std::string_view s, std::string_view delim,
                                    std::size_t max_fields) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < max_fields) {
    const auto at = s.find(delim);
    if (at == std::string_view::npos) break;
    out.push_back(s.substr(0, at));
    s.remove_prefix(at + delim.size());
  }
  out.push_back(s);
  return out;
}

}  // namespace

namespace {

// The rows of `text` (kSacctFormat, or kReportSacctFormat when `tres`), fields cut at `delim`;
// `keep` says which JobID/JobIDRaw pairs to keep.
template <typename Keep>
std::vector<JobRun> parse_rows(std::string_view text, std::string_view delim, bool tres,
                               Keep keep) {
  const std::size_t fields = tres ? 15 : 14;
  std::vector<JobRun> out;
  bool last_kept = false;  // the previous line was a kept row (for continuations)
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto f = split(line, delim, fields);
    if (f.size() < fields) {  // an AdminComment's newline: the rest of the last row's comment
      if (last_kept && !out.empty()) out.back().admin_comment += "\n" + std::string(line);
      continue;
    }
    last_kept = keep(trim(f[0]), trim(f[1]));
    if (!last_kept) continue;
    JobRun r;
    r.job_id = std::string(trim(f[0]));
    r.user = std::string(trim(f[2]));
    r.account = std::string(trim(f[3]));
    r.qos = std::string(trim(f[4]));
    r.partition = std::string(trim(f[5]));
    r.submit = epoch_field(f[6]);
    r.eligible = epoch_field(f[7]);
    r.start = epoch_field(f[8]);
    r.end = epoch_field(f[9]);
    r.state = first_word(f[10]);
    r.exit_code = std::string(trim(f[11]));
    r.nodes = std::string(trim(f[12]));
    if (r.nodes == "None assigned" || r.nodes == "(null)") r.nodes.clear();
    if (tres) r.alloc_tres = std::string(trim(f[13]));
    r.admin_comment = std::string(f[fields - 1]);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::string sacct_delimiter(uint64_t nonce) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  return std::string(1, kSacctDelimiter) + hex + std::string(1, kSacctDelimiter);
}

std::vector<JobRun> parse_sacct_runs(std::string_view text, std::string_view job_id,
                                     std::string_view delimiter) {
  auto out = parse_rows(text, delimiter, false, [&](std::string_view id, std::string_view raw) {
    return id == job_id || raw == job_id;
  });
  std::stable_sort(out.begin(), out.end(),
                   [](const JobRun& a, const JobRun& b) { return a.submit < b.submit; });
  return out;
}

std::vector<JobRun> parse_sacct_all(std::string_view text, std::string_view delimiter) {
  // Steps (123.batch, 123.0) are not runs; -X leaves them out, this makes sure.
  auto rows = parse_rows(text, delimiter, true, [](std::string_view id, std::string_view /*raw*/) {
    return !id.empty() && id.find('.') == std::string_view::npos;
  });
  std::map<std::string, std::size_t> first;  // JobID -> order first seen
  for (const JobRun& r : rows) first.emplace(r.job_id, first.size());
  std::stable_sort(rows.begin(), rows.end(), [&](const JobRun& a, const JobRun& b) {
    const std::size_t fa = first[a.job_id];
    const std::size_t fb = first[b.job_id];
    return fa != fb ? fa < fb : a.submit < b.submit;
  });
  return rows;
}

std::optional<ShownJob> parse_shown_job(std::string_view text) {
  ShownJob j;
  bool found = false;
  // Only the lines Slurm starts with these keys are read, and on the first one (JobName may
  // hold anything) only its first field: a job name cannot forge a state.
  static constexpr std::string_view kLines[] = {
      "UserId=",     "Priority=",  "JobState=",  "Requeue=",
      "SubmitTime=", "StartTime=", "Partition=", "NodeList="};
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (eat(line, "AdminComment=")) {
      if (line.ends_with(' ')) line.remove_suffix(1);
      j.run.admin_comment = std::string(line);
      continue;
    }
    if (eat(line, "JobId=")) {
      j.run.job_id = std::string(line.substr(0, line.find(' ')));
      found = !j.run.job_id.empty();
      continue;
    }
    if (std::none_of(std::begin(kLines), std::end(kLines),
                     [&](std::string_view k) { return line.starts_with(k); })) {
      continue;
    }
    for (const auto field : split(line, " ", 64)) {
      const auto eq = field.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = field.substr(0, eq);
      const std::string_view v = field.substr(eq + 1);
      if (key == "UserId") {
        j.run.user = std::string(v.substr(0, v.find('(')));
      } else if (key == "Account") {
        j.run.account = std::string(v);
      } else if (key == "QOS") {
        j.run.qos = std::string(v);
      } else if (key == "JobState") {
        j.run.state = std::string(v);
      } else if (key == "Reason") {
        j.reason = std::string(v);
      } else if (key == "Restarts") {
        // Slurm counts restarts in 16 bits (job_record_t.restart_cnt): a larger number is not
        // slurmctld's (a Comment's line), and the story keeps one record per run up to it.
        j.restarts = number<uint16_t>(v).value_or(0);
      } else if (key == "ExitCode") {
        j.run.exit_code = std::string(v);
      } else if (key == "SubmitTime") {
        j.run.submit = epoch_field(v);
      } else if (key == "EligibleTime") {
        j.run.eligible = epoch_field(v);
      } else if (key == "StartTime") {
        j.run.start = epoch_field(v);
      } else if (key == "EndTime") {
        j.run.end = epoch_field(v);
      } else if (key == "Partition") {
        j.run.partition = std::string(v);
      } else if (key == "NodeList" && v != "(null)") {
        j.run.nodes = std::string(v);
      }
    }
  }
  if (!found) return std::nullopt;
  return j;
}

// ---- the story ---------------------------------------------------------------------------

namespace {

bool finished(std::string_view state) {
  return state != "PENDING" && state != "RUNNING" && state != "SUSPENDED" &&
         state != "CONFIGURING" && state != "COMPLETING" && state != "RESIZING" &&
         state != "REQUEUE_HOLD" && state != "REQUEUE_FED" && state != "SPECIAL_EXIT" &&
         state != "STOPPED" && !state.empty();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The runs, with the current one as slurmctld shows it (fresher than slurmdbd's copy).
std::vector<JobRun> merged_runs(const std::vector<JobRun>& runs,
                                const std::optional<ShownJob>& now) {
  std::vector<JobRun> out = runs;
  if (!now) return out;
  const std::size_t i = now->restarts;
  if (out.size() <= i) out.resize(i + 1);
  JobRun& r = out[i];
  const JobRun& s = now->run;
  const auto take = [](auto& into, const auto& from, const auto& none) {
    if (from != none) into = from;
  };
  take(r.job_id, s.job_id, std::string());
  take(r.submit, s.submit, int64_t{0});
  take(r.eligible, s.eligible, int64_t{0});
  take(r.start, s.start, int64_t{0});
  take(r.state, s.state, std::string());
  take(r.nodes, s.nodes, std::string());
  take(r.exit_code, s.exit_code, std::string());
  take(r.user, s.user, std::string());
  take(r.account, s.account, std::string());
  take(r.qos, s.qos, std::string());
  take(r.partition, s.partition, std::string());
  take(r.admin_comment, s.admin_comment, std::string());
  // A held job is not eligible, whatever begin time slurmctld still shows.
  if (s.state == "PENDING" && now->reason.starts_with("JobHeld")) r.eligible = 0;
  // A run still going has no end; slurmctld shows its time limit there.
  r.end = finished(r.state) ? (s.end != 0 ? s.end : r.end) : 0;
  return out;
}

// Every note of every record, each once (the comment is carried from run to run, so the
// later records repeat the earlier notes).
std::vector<StoryNote> all_notes(const std::vector<JobRun>& runs) {
  // A note with a time stamp is one event however often it was written (the watcher can note
  // one preemption twice); one without (a lost run) counts as often as a record repeats it.
  std::vector<StoryNote> out;
  std::map<std::string, int> kept;
  for (const auto& r : runs) {
    std::map<std::string, int> here;
    for (auto& n : parse_story_notes(r.admin_comment)) {
      const std::string key = std::to_string(static_cast<int>(n.kind)) + n.text;
      if (n.at != 0 && kept[key] > 0) continue;
      if (++here[key] > kept[key]) {
        ++kept[key];
        out.push_back(std::move(n));
      }
    }
  }
  return out;
}

// Ranks of events of one run at the same second: the order they happen in.
enum Rank : int {
  kBegin = 0,  // submitted, requeued
  kRouted,
  kResumed,
  kEligible,
  kStarted,
  kWarned,  // preempted, paused
  kSignal,
  kOutcome,  // exited, killed, requeued by itself, ...
  kEnded,
  kNow,
};

struct Pending {
  StoryEvent e;
  int rank = 0;
  std::size_t seq = 0;
};

std::string who_text(const StoryNote& n) { return n.who + (n.admin ? " (admin)" : ""); }

std::string requeue_text(const StoryNote& n) {
  return n.held ? "requeued held as restart " + std::to_string(n.restart) + " (paused)"
                : "requeued as restart " + std::to_string(n.restart);
}

}  // namespace

std::vector<uint32_t> preemptors_named(const std::vector<JobRun>& runs,
                                       const std::optional<ShownJob>& now) {
  std::vector<uint32_t> out;
  for (const auto& n : all_notes(merged_runs(runs, now))) {
    if (n.kind == NoteKind::Preempted && n.by_job != 0 &&
        std::find(out.begin(), out.end(), n.by_job) == out.end()) {
      out.push_back(n.by_job);
    }
  }
  return out;
}

std::vector<StoryEvent> job_story(const std::vector<JobRun>& in_runs,
                                  const std::optional<ShownJob>& now,
                                  const std::map<uint32_t, std::string>& users) {
  const std::vector<JobRun> runs = merged_runs(in_runs, now);
  std::vector<Pending> ev;
  const auto add = [&](int64_t at, std::size_t run, std::string name, std::string details,
                       int rank) -> StoryEvent& {
    Pending p;
    p.e.at = at;
    p.e.run = static_cast<uint32_t>(run);
    p.e.event = std::move(name);
    p.e.details = std::move(details);
    p.rank = rank;
    p.seq = ev.size();
    ev.push_back(std::move(p));
    return ev.back().e;
  };

  // Slurm's records, run by run.
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const JobRun& r = runs[i];
    if (r.submit != 0) {
      if (i == 0) {
        std::string d;
        const auto part = [&](std::string_view label, const std::string& v) {
          if (v.empty()) return;
          d += (d.empty() ? "" : ", ") + std::string(label) + v;
        };
        part("by ", r.user);
        part("account ", r.account);
        part("qos ", r.qos);
        part("partition ", r.partition);
        add(r.submit, i, "submitted", d, kBegin);
      } else {
        add(r.submit, i, "requeued", "as restart " + std::to_string(i), kBegin);
      }
    }
    if (r.eligible != 0 && (i > 0 || r.eligible != r.submit)) {
      add(r.eligible, i, "eligible", i > 0 ? "again, may start" : "may start", kEligible);
    }
    if (r.start != 0 && !r.nodes.empty()) {
      StoryEvent& e =
          add(r.start, i, "started",
              "on " + r.nodes + (i > 0 ? ", restart " + std::to_string(i) : ""), kStarted);
      e.nodes = r.nodes;
    }
    if (r.end != 0 && finished(r.state)) {
      const bool last = i + 1 == runs.size();
      const std::string exit = r.exit_code.empty() ? "" : "exit " + r.exit_code;
      if (last && r.state != "PREEMPTED" && r.state != "REQUEUED") {
        add(r.end, i, lower(r.state), exit, kEnded);
      } else {
        add(r.end, i, "ended", r.state + (exit.empty() ? "" : ", " + exit), kEnded);
      }
    }
  }
  if (now && now->run.state == "PENDING" && !runs.empty()) {
    add(0, runs.size() - 1, "pending", "now, reason " + now->reason, kNow);
  }

  // The plugins' notes.
  const auto run_started_by = [&](int64_t at) {  // the last run started by `at`
    std::size_t run = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].start != 0 && runs[i].start <= at) run = i;
    }
    return run;
  };
  const auto run_submitted_by = [&](int64_t at) {  // the last run submitted by `at`
    std::size_t run = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].submit != 0 && runs[i].submit <= at) run = i;
    }
    return run;
  };
  int64_t last_at = runs.empty() ? 0 : runs.front().submit;
  std::size_t last_run = 0;
  for (const StoryNote& n : all_notes(runs)) {
    const int64_t at = n.at != 0 ? n.at : last_at;
    std::size_t run = last_run;
    if (n.requeued && n.restart > 0) {
      run = n.restart - 1;  // the note of a requeue belongs to the run it ended
    } else if (n.kind == NoteKind::Submission) {
      run = 0;
    } else if (n.kind == NoteKind::Preempted || (n.kind == NoteKind::Paused && n.grace_s >= 0) ||
               n.kind == NoteKind::ExitedInGrace || n.kind == NoteKind::KilledAtGraceEnd ||
               n.kind == NoteKind::Finished || n.kind == NoteKind::ExitedFinished ||
               n.kind == NoteKind::Refunded) {
      run = run_started_by(at);
    } else if (n.at != 0) {
      run = run_submitted_by(at);
    }
    last_at = at;
    last_run = run;
    switch (n.kind) {
      case NoteKind::Submission: add(at, run, "routed", "slurm-preempt: " + n.text, kRouted); break;
      case NoteKind::Preempted: {
        std::string by = n.by_job != 0 ? "by JobId=" + std::to_string(n.by_job)
                                       : std::string("by a job slurmctld did not name");
        std::string user;
        if (const auto u = users.find(n.by_job); n.by_job != 0 && u != users.end()) {
          user = u->second;
          by += " of " + user;
        }
        if (!n.qos.empty() || !n.account.empty()) {
          by += " (qos " + n.qos + ", account " + n.account + ")";
        }
        if (!n.reason.empty()) by += ": " + n.reason;
        StoryEvent& e = add(at, run, "preempted", by, kWarned);
        e.by_job = n.by_job;
        e.by_user = user;
        add(at, run, "signal",
            signal_name(n.signal) + " to the job's processes that catch it, grace " +
                std::to_string(n.grace_s) + " s (until " + format_utc(at + n.grace_s) + ")",
            kSignal);
        break;
      }
      case NoteKind::Paused: {
        StoryEvent& e = add(at, run, "paused",
                            "by " + who_text(n) +
                                (n.grace_s >= 0 ? ", grace " + std::to_string(n.grace_s) + " s"
                                                : std::string(" while pending: held")),
                            kWarned);
        e.by_user = n.who;
        if (n.grace_s >= 0) {
          add(at, run, "signal",
              "checkpoint signal to the job's processes that catch it, grace " +
                  std::to_string(n.grace_s) + " s (until " + format_utc(at + n.grace_s) + ")",
              kSignal);
        }
        break;
      }
      case NoteKind::Resumed:
        add(at, run, "resumed", "by " + who_text(n), kResumed).by_user = n.who;
        break;
      case NoteKind::ExitedInGrace:
        add(at, run, "exited",
            "in its grace (exit " + std::to_string(n.exit_status) + "), " +
                (n.requeued ? requeue_text(n) : std::string("not requeued (no --requeue)")),
            kOutcome);
        break;
      case NoteKind::KilledAtGraceEnd:
        add(at, run, "killed",
            "at the grace's end, " +
                (n.requeued ? requeue_text(n) : std::string("cancelled (no --requeue)")),
            kOutcome);
        break;
      case NoteKind::RequeuedByJob:
        add(at, run, "self-requeued",
            "the job ran scontrol requeue in its grace, restart " + std::to_string(n.restart),
            kOutcome);
        break;
      case NoteKind::RequeuedAtPauseEnd:
        add(at, run, "pause-end",
            "requeued by Slurm at the pause's grace end, held as restart " +
                std::to_string(n.restart),
            kOutcome);
        break;
      case NoteKind::RunLost:
        add(at, run, "run-lost", "slurmctld lost this run in a restart; held (paused)", kOutcome);
        break;
      case NoteKind::Finished:
        add(at, run, "finished",
            "by " + who_text(n) + ": the job's work is done; an exit 0 in a grace is not requeued",
            kWarned)
            .by_user = n.who;
        break;
      case NoteKind::ExitedFinished:
        add(at, run, "exited", "in its grace (exit 0), finished: not requeued", kOutcome);
        break;
      case NoteKind::Protected:
        add(at, run, "protected",
            "from preemption until " + format_utc(n.until) + ": preempted " +
                std::to_string(n.count) + " times within " + std::to_string(n.window_s) +
                " s, taken as a victim last",
            kOutcome);
        break;
      case NoteKind::Refunded: {
        std::string charge = note_refunded(0, 0, n.charge);
        charge = charge.substr(charge.rfind('('));
        add(at, run, "refunded",
            std::to_string(n.billing_s) +
                " billing-s of fair-share usage given back: the run's work was lost " + charge,
            kEnded);
        break;
      }
      case NoteKind::Unparsed:
        add(at, run, "unparsed", "slurm-preempt: " + quote(n.text, 256), kOutcome);
        break;
    }
  }

  const auto key = [](const Pending& p) {
    // Events of unknown time ("pending", now) go last in their run.
    return std::make_tuple(p.e.run, p.e.at == 0 ? INT64_MAX : p.e.at, p.rank, p.seq);
  };
  std::sort(ev.begin(), ev.end(),
            [&](const Pending& a, const Pending& b) { return key(a) < key(b); });
  std::vector<StoryEvent> out;
  out.reserve(ev.size());
  for (auto& p : ev) out.push_back(std::move(p.e));
  return out;
}

std::string format_story_table(const std::vector<StoryEvent>& events) {
  std::string out;
  for (const auto& e : events) {
    char head[96];
    std::snprintf(head, sizeof head, "%-20s  run %-2u  %-13s  ",
                  e.at != 0 ? format_utc(e.at).c_str() : "-", e.run, e.event.c_str());
    out += head;
    out += e.details;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  return out;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // A valid UTF-8 sequence is kept; anything else becomes U+FFFD.
    std::size_t len = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
    }
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    }
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    } else if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else {
      out += "\\ufffd";
    }
  }
  return out + "\"";
}

std::string format_story_json(std::string_view job_id, const std::vector<StoryEvent>& events) {
  std::string out = "{\"job\":" + json_string(job_id) + ",\"events\":[";
  for (std::size_t i = 0; i < events.size(); ++i) {
    const StoryEvent& e = events[i];
    out += i == 0 ? "\n" : ",\n";
    out += "{\"time\":" + (e.at != 0 ? json_string(format_utc(e.at)) : std::string("null"));
    out += ",\"epoch\":" + (e.at != 0 ? std::to_string(e.at) : std::string("null"));
    out += ",\"run\":" + std::to_string(e.run);
    out += ",\"event\":" + json_string(e.event);
    out += ",\"details\":" + json_string(e.details);
    if (!e.nodes.empty()) out += ",\"nodes\":" + json_string(e.nodes);
    if (e.by_job != 0) out += ",\"by_job\":" + std::to_string(e.by_job);
    if (!e.by_user.empty()) out += ",\"by_user\":" + json_string(e.by_user);
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace sp
