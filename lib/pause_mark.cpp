#include "pause_mark.hpp"

#include <charconv>
#include <ctime>

#include "checkpoint.hpp"
#include "scan.hpp"
#include "units.hpp"

namespace sp {
namespace {

// The mark starting at `pos` ("slurm-preempt: paused by NAME[ (admin)] at TIME...").
PauseMark mark_at(std::string_view text, std::size_t pos, bool paused) {
  PauseMark m;
  m.paused = paused;
  const std::size_t end = text.find(';', pos);
  const std::string_view entry = text.substr(pos, end == std::string_view::npos ? end : end - pos);
  const std::string_view mark = paused ? kPausedByMark : kResumedByMark;
  // " at " after the name: a user's Comment may hold "paused by at ...", whose " at " ends
  // inside the mark itself.
  const std::size_t at = entry.find(" at ", mark.size());
  if (at == std::string_view::npos) return m;
  std::string_view who = entry.substr(mark.size(), at - mark.size());
  constexpr std::string_view kAdmin = " (admin)";
  m.admin = who.ends_with(kAdmin);
  if (m.admin) who.remove_suffix(kAdmin.size());
  m.who = std::string(who);
  m.at = parse_utc(entry.substr(at + 4));
  m.running = paused && entry.find(", grace ") != std::string_view::npos;
  return m;
}

}  // namespace

namespace {
bool note_start(std::string_view story, std::size_t at) {
  return at == 0 || story[at - 1] == ' ' || story[at - 1] == ';';
}
}  // namespace

std::size_t rfind_note(std::string_view story, std::string_view mark) {
  for (std::size_t at = story.rfind(mark); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : story.rfind(mark, at - 1)) {
    if (note_start(story, at)) return at;
  }
  return std::string_view::npos;
}

std::size_t find_note(std::string_view story, std::string_view mark, std::size_t from) {
  for (std::size_t at = story.find(mark, from); at != std::string_view::npos;
       at = story.find(mark, at + 1)) {
    if (note_start(story, at)) return at;
  }
  return std::string_view::npos;
}

int64_t parse_utc(std::string_view s) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s[19] != 'Z') {
    return 0;
  }
  auto num = [&](std::size_t at, std::size_t len) {
    int v = -1;
    const auto [p, ec] = std::from_chars(s.data() + at, s.data() + at + len, v);
    return ec == std::errc() && p == s.data() + at + len ? v : -1;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_hour < 0 || tm.tm_min < 0 ||
      tm.tm_sec < 0) {
    return 0;
  }
  return static_cast<int64_t>(timegm(&tm));
}

PauseMark last_pause_mark(std::string_view admin_comment) {
  const std::size_t p = rfind_note(admin_comment, kPausedByMark);
  const std::size_t r = rfind_note(admin_comment, kResumedByMark);
  if (p == std::string_view::npos && r == std::string_view::npos) return {};
  if (r == std::string_view::npos || (p != std::string_view::npos && p > r)) {
    return mark_at(admin_comment, p, true);
  }
  return mark_at(admin_comment, r, false);
}

namespace {
// The last "preempted at" note of a comment, if it reads back.
std::optional<PreemptedNote> last_preemption(std::string_view comment) {
  constexpr std::string_view kMark = "slurm-preempt: preempted at ";
  const std::size_t p = rfind_note(comment, kMark);  // not one quoted in foreign text
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view note = comment.substr(p + 15);  // after "slurm-preempt: "
  note = note.substr(0, note.find(';'));
  return parse_note_preempted(note);
}
}  // namespace

ShownPause shown_pause(std::string_view text) {
  ShownPause out;
  std::string_view admin;
  std::string_view system;
  std::string_view comment;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.starts_with("AdminComment=")) {
      admin = line.substr(13);
    } else if (line.starts_with("SystemComment=")) {
      system = line.substr(14);
    } else if (line.starts_with("Comment=")) {
      comment = line.substr(8);
    }
    // "StartTime=N EndTime=N Deadline=..." (a job name with spaces cannot forge this line).
    if (!line.starts_with("StartTime=")) continue;
    if (const auto pos = line.find(" EndTime="); pos != std::string_view::npos) {
      std::string_view v = line.substr(pos + 9);
      v = v.substr(0, v.find(' '));
      int64_t t = 0;
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), t);
      if (ec == std::errc() && p == v.data() + v.size() && t > 0) out.end_time = t;
    }
  }
  out.mark = last_pause_mark(admin);
  if (!out.mark.paused && out.mark.at == 0) out.mark = last_pause_mark(system);
  out.preemption = last_preemption(admin);
  if (!out.preemption) out.preemption = last_preemption(system);
  // The story in Comment (story.field: comment): read only when the other fields have no mark,
  // since the job's owner can write it (a forged name there is only in the owner's notice).
  if (!out.mark.paused && out.mark.at == 0) out.mark = last_pause_mark(comment);
  if (!out.preemption) out.preemption = last_preemption(comment);
  return out;
}

std::optional<PreemptedNote> parse_note_preempted(std::string_view note) {
  using scan::eat;
  using scan::number;
  using scan::upto;
  std::string_view s = note;
  PreemptedNote n;
  const auto at = (eat(s, "preempted at ") ? scan::eat_time(s) : std::nullopt);
  if (!at || !eat(s, " by ")) return std::nullopt;
  n.at = *at;
  if (eat(s, "JobId=")) {
    std::size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
    const auto id = number<uint32_t>(s.substr(0, digits));
    if (!id) return std::nullopt;
    n.by_job = *id;
    s.remove_prefix(digits);
  } else if (!eat(s, "a job")) {
    return std::nullopt;
  }
  if (eat(s, " (qos ")) {
    const auto qos = upto(s, ", account ");
    auto account = upto(s, "): ");
    if (!qos || !account) return std::nullopt;
    n.qos = std::string(*qos);
    // "ACCOUNT, REASON" (account names have no comma)
    if (const auto comma = account->find(", "); comma != std::string_view::npos) {
      n.reason = std::string(account->substr(comma + 2));
      account = account->substr(0, comma);
    }
    n.account = std::string(*account);
  } else if (!eat(s, ": ")) {
    return std::nullopt;
  }
  const auto sig = eat(s, "signal ") ? upto(s, ", grace ") : std::nullopt;
  const auto signo = sig ? parse_signal(*sig) : std::nullopt;
  if (!signo || !s.ends_with(" s")) return std::nullopt;
  n.signal = *signo;
  const auto g = number<int64_t>(s.substr(0, s.size() - 2));
  if (!g) return std::nullopt;
  n.grace_s = *g;
  // Only a text the writer writes back identically is a note.
  JobCheckpoint c;
  c.signal = n.signal;
  c.grace_s = n.grace_s;
  if (note_preempted(n.at, n.by_job, n.qos, n.account, c, n.reason) != note) return std::nullopt;
  return n;
}

std::string_view last_pause_note(std::string_view admin_comment) {
  const std::size_t p = rfind_note(admin_comment, kPausedByMark);
  const std::size_t r = rfind_note(admin_comment, kResumedByMark);
  if (p == std::string_view::npos || (r != std::string_view::npos && r > p)) return {};
  constexpr std::string_view kPrefix = "slurm-preempt: ";  // what kPausedByMark adds
  std::string_view note = admin_comment.substr(p + kPrefix.size());
  return note.substr(0, note.find(';'));
}

std::string note_paused(std::string_view who, bool admin, int64_t at, int64_t grace_s) {
  std::string out =
      "paused by " + std::string(who) + (admin ? " (admin)" : "") + " at " + format_utc(at);
  out += grace_s >= 0 ? ", grace " + std::to_string(grace_s) + " s" : ", held while pending";
  return out;
}

std::string note_resumed(std::string_view who, bool admin, int64_t at) {
  return "resumed by " + std::string(who) + (admin ? " (admin)" : "") + " at " + format_utc(at);
}

std::string note_finished(std::string_view who, bool admin, int64_t at) {
  return "finished by " + std::string(who) + (admin ? " (admin)" : "") + " at " + format_utc(at) +
         ": not requeued if it exits 0 in a grace";
}

int64_t last_finished_at(std::string_view admin_comment) {
  const std::size_t p = rfind_note(admin_comment, kFinishedByMark);
  if (p == std::string_view::npos) return 0;
  std::string_view entry = admin_comment.substr(p + kFinishedByMark.size());
  entry = entry.substr(0, entry.find(';'));
  const std::size_t at = entry.find(" at ");
  return at == std::string_view::npos ? 0 : parse_utc(entry.substr(at + 4));
}

}  // namespace sp
