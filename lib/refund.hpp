// Lost work does not cost fair share (issue 16 item 4). A run killed at the end of its
// preemption grace saved nothing (had it saved, it would have exited in the grace): the usage
// it accrued buys no work, so priority/fairshare refunds it when the run ends, all of it or all
// but the policy's priority.lost_work_charge. Pure; the plugin reads the job's story (the notes
// the watcher wrote during the run) and applies the answer to the association and QOS usage.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sp {

// The part of a run's usage to refund when the run that started at `run_start` ends, from the
// job's story: 1 - charge when the story notes, during that run, a preemption ("preempted at",
// note_preempted) and the kill at its grace end ("killed at grace end", not a pause's: a job
// paused by its owner is charged as it ran), and no refund of that run yet; otherwise 0. A run
// that exited in its grace (it saved), one killed at its time limit, and one with no notes are
// charged in full. `killed_told`: the run ended killed at its grace end as Slurm reported the end
// (killed_at_grace_end, from lib/watch_events.hpp PreemptedRuns), before any note of it may
// exist (grace 0, or Slurm's own grace check before the watcher's kill): 1 - charge unless the
// story already notes this run's refund.
double refund_fraction(std::string_view story, int64_t run_start, double lost_work_charge,
                       bool killed_told = false);

// Whether a preempted run ended killed at its grace's end, so that it saved nothing: it ended
// (`ended`) at or after the grace end Slurm was given (`grace_end`; a grace of 0 ends where it
// begins), and not by exiting by itself (`exited`: completed, failed, out of memory, timed
// out). 0 for either time: not known, false.
bool killed_at_grace_end(int64_t grace_end, int64_t ended, bool exited);

// "fair-share usage refunded at T: N billing-s of a run lost at its grace end
// (lost_work_charge C)": N is the billable TRES-seconds (times the QOS' UsageFactor) given back.
std::string note_refunded(int64_t at, int64_t billing_s, double lost_work_charge);

}  // namespace sp
