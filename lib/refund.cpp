#include "refund.hpp"

#include <array>
#include <charconv>

#include "checkpoint.hpp"
#include "story.hpp"

namespace sp {

double refund_fraction(std::string_view story, int64_t run_start, double lost_work_charge,
                       bool killed_told) {
  // Most jobs end without a kill at a grace end: no parse for them.
  if (!killed_told && story.find("killed at grace end ") == std::string_view::npos) return 0.0;
  if (!(lost_work_charge >= 0.0 && lost_work_charge < 1.0)) return 0.0;
  bool preempted = false;
  bool killed = false;
  for (const StoryNote& n : parse_story_notes(story)) {
    if (n.at < run_start || run_start <= 0) continue;  // an earlier run's note
    if (n.kind == NoteKind::Preempted) preempted = true;
    if (n.kind == NoteKind::KilledAtGraceEnd && !n.held) killed = true;
    if (n.kind == NoteKind::Refunded) return 0.0;  // this run's refund was given
  }
  return killed_told || (preempted && killed) ? 1.0 - lost_work_charge : 0.0;
}

bool killed_at_grace_end(int64_t grace_end, int64_t ended, bool exited) {
  return grace_end > 0 && ended > 0 && ended >= grace_end && !exited;
}

std::string note_refunded(int64_t at, int64_t billing_s, double lost_work_charge) {
  std::array<char, 32> charge{};
  const auto r = std::to_chars(charge.data(), charge.data() + charge.size(), lost_work_charge);
  return "fair-share usage refunded at " + format_utc(at) + ": " + std::to_string(billing_s) +
         " billing-s of a run lost at its grace end (lost_work_charge " +
         std::string(charge.data(), r.ptr) + ")";
}

}  // namespace sp
