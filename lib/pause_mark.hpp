// The pause and resume marks in a job's story (AdminComment): written by job_submit/preempt's
// job_modify, read by the watcher, preemptctl and, on the nodes, the checkpoint sentinel (which
// names who paused in the notice). Pure text, no YAML: part of lib/libspnode.la.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sp {

inline constexpr std::string_view kPausedByMark = "slurm-preempt: paused by ";
inline constexpr std::string_view kResumedByMark = "slurm-preempt: resumed by ";
// A running job said its work is done (`preemptctl finished`): should it exit during a grace
// (exit 0), it is not requeued.
inline constexpr std::string_view kFinishedByMark = "slurm-preempt: finished by ";

// Where a note starting with `mark` ("slurm-preempt: ...") is in a story, the last one / the
// first at or after `from`; npos when none. A note starts the text or follows a space or a
// ';' (as the plugins append them): the same words inside someone else's text in the field
// (a quoted "slurm-preempt: ..." in jobstats' JSON) are not a note.
std::size_t rfind_note(std::string_view story, std::string_view mark);
std::size_t find_note(std::string_view story, std::string_view mark, std::size_t from = 0);

// The last pause or resume the job's AdminComment tells (the notes below).
struct PauseMark {
  bool paused = false;   // the last mark is a pause
  bool admin = false;    // ... by an operator or administrator (only they resume it)
  int64_t at = 0;        // when
  bool running = false;  // a running job's pause (", grace N s"), not a pending job's hold
  std::string who;       // the user name the mark gives
  bool operator==(const PauseMark&) const = default;
};
PauseMark last_pause_mark(std::string_view admin_comment);
// The text of that last mark when it is a pause ("paused by erin at ..., grace 30 s", as
// note_paused() wrote it), else empty. The watcher keeps it with a paused run, to write it
// back should a slurmctld crash lose it.
std::string_view last_pause_note(std::string_view admin_comment);
// "paused by erin at 2026-11-23T18:40:01Z, grace 30 s" ("(admin)" after the name for an
// operator; "held while pending" instead of the grace for a pending job);
// "resumed by erin at 2026-11-23T18:45:00Z".
std::string note_paused(std::string_view who, bool admin, int64_t at, int64_t grace_s);
std::string note_resumed(std::string_view who, bool admin, int64_t at);
// "finished by alice at 2026-11-23T18:44:00Z: not requeued if it exits 0 in a grace".
std::string note_finished(std::string_view who, bool admin, int64_t at);
// When the story's last finished mark was made (epoch seconds), 0 when it has none.
int64_t last_finished_at(std::string_view admin_comment);

// A "preempted at" note (note_preempted's text, without "slurm-preempt: " and ";") with its
// fields; parse_note_preempted gives it only when note_preempted writes the very same text for
// them. The one reader of that note: lib/story and the sentinel both use it.
struct PreemptedNote {
  int64_t at = 0;
  uint32_t by_job = 0;  // 0: not named
  std::string qos;      // the preemptor's QOS ("" when the note names none)
  std::string account;  // the preemptor's account
  std::string reason;   // "owner reclaim", "quota reclaim", "class", "qos" or ""
  int signal = 0;
  int64_t grace_s = 0;
  bool operator==(const PreemptedNote&) const = default;
};
std::optional<PreemptedNote> parse_note_preempted(std::string_view note);

// What the sentinel on a node learns of a job it must pause or warn, from `scontrol show job
// ID` run with SLURM_TIME_FORMAT=%s (epoch seconds): the grace's end (EndTime, which job_modify set
// to the pause's own grace) and the last mark of the story (AdminComment, else SystemComment, else
// Comment: the node does not read the policy, so it looks where story.field may put it). Also the
// story's last "preempted at" note, in the same order of fields (the notice of a preemption names
// who and why). end_time 0 when the text has none.
struct ShownPause {
  int64_t end_time = 0;
  PauseMark mark;
  std::optional<PreemptedNote> preemption;  // the story's last "preempted at" note
  bool operator==(const ShownPause&) const = default;
};
ShownPause shown_pause(std::string_view show_job_text);

// "2026-11-23T18:40:01Z" -> epoch seconds; 0 when it is not that form.
int64_t parse_utc(std::string_view s);

}  // namespace sp
