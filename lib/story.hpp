// One job's story, run by run (`preemptctl events JOB`): the notes the plugins write into the
// job's AdminComment (checkpoint.hpp, pause_mark.hpp) read back, merged with Slurm's own
// records of each run (sacct -D) and what slurmctld shows now (scontrol show job) into one
// ordered list of events. Pure; no Slurm headers. The command only runs sacct and scontrol.
//
// The codec: parse_story_notes() reads every note kind the plugins write, and accepts a note
// only if the writer (note_preempted(), note_paused(), ...) given the fields it read writes
// the very same text back; anything else that starts "slurm-preempt:" is kept as Unparsed, never
// dropped. Text that is not ours (an administrator's own AdminComment) is ignored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sp {

enum class NoteKind : uint8_t {
  Submission,          // job_submit changed the submission: "qos (default)->standby; requeue on"
  Preempted,           // note_preempted
  ExitedInGrace,       // note_exited_in_grace
  KilledAtGraceEnd,    // note_killed_at_grace_end
  RequeuedByJob,       // note_requeued_by_job
  RequeuedAtPauseEnd,  // note_requeued_at_pause_end
  RunLost,             // note_run_lost_paused
  Paused,              // note_paused
  Resumed,             // note_resumed
  Finished,            // note_finished: the job said its work is done (preemptctl finished)
  ExitedFinished,      // note_exited_finished: exited 0 in its grace after saying so
  Protected,           // note_protected: anti-starvation protection earned by a preemption
  Refunded,            // note_refunded: priority/fairshare gave back a lost run's usage
  Unparsed,            // "slurm-preempt: ..." that no writer wrote (truncated, garbled, newer)
};

struct StoryNote {
  std::string qos;        // Preempted: the preemptor's QOS ("" when the note names none)
  std::string account;    // Preempted: the preemptor's account
  std::string reason;     // Preempted: "owner reclaim", "quota reclaim", "class", "qos" or ""
  std::string who;        // Paused, Resumed, Finished: the user name
  std::string text;       // the note as found (Submission: its items joined by "; ")
  int64_t at = 0;         // epoch seconds; 0: the note has no time
  int64_t grace_s = -1;   // Preempted, Paused (-1: paused while pending, no grace)
  int64_t until = 0;      // Protected: until when
  int64_t window_s = 0;   // Protected: the window
  int64_t billing_s = 0;  // Refunded: billable TRES-seconds given back
  double charge = 0;      // Refunded: the lost_work_charge applied
  uint32_t by_job = 0;    // Preempted: the preemptor (0: not found)
  uint32_t restart = 0;   // the restart count the requeue gave (Requeued*, Exited, Killed)
  uint32_t count = 0;     // Protected: preemptions within the window
  int signal = 0;         // Preempted: the checkpoint signal
  int exit_status = 0;    // ExitedInGrace
  NoteKind kind = NoteKind::Unparsed;
  bool requeued = false;  // ExitedInGrace, KilledAtGraceEnd (always for the Requeued* kinds)
  bool held = false;      // ... requeued held (a pause)
  bool admin = false;     // Paused, Resumed, Finished: by an operator
  bool operator==(const StoryNote&) const = default;
};

// Every slurm-preempt note of an AdminComment, in the order written.
std::vector<StoryNote> parse_story_notes(std::string_view admin_comment);

// One run of a job as Slurm recorded it (a `sacct -D -X` row; the current run from
// `scontrol show job`). Times are epoch seconds, 0 when unknown.
struct JobRun {
  std::string job_id;
  int64_t submit = 0;
  int64_t eligible = 0;
  int64_t start = 0;
  int64_t end = 0;
  std::string state;      // first word: COMPLETED, PREEMPTED, REQUEUED, RUNNING, PENDING, ...
  std::string nodes;      // "" when none
  std::string exit_code;  // "0:0"
  std::string user, account, qos, partition;
  std::string admin_comment;
  std::string alloc_tres;  // "cpu=2,node=1,gres/gpu=1" (preemptctl report's rows only)
  bool operator==(const JobRun&) const = default;
};

// What slurmctld shows of the job now, while it knows it.
struct ShownJob {
  JobRun run;
  uint32_t restarts = 0;
  std::string reason;  // "None", "JobHeldUser", "BeginTime", ...
};

// The sacct command line and its parser: `sacct <kSacctArgs> -j ID --format=<kSacctFormat>`
// run with SLURM_TIME_FORMAT=%s. Rows of other jobs (the other tasks of an array) are left
// out; rows come back in run order (by submit time). A row whose AdminComment held a newline
// is joined back.
inline constexpr std::string_view kSacctFormat =
    "JobID,JobIDRaw,User,Account,QOS,Partition,Submit,Eligible,Start,End,State,ExitCode,NodeList,"
    "AdminComment";
// The delimiter: sacct prints the story field raw, and a job's owner may put a line break and
// a whole forged row in it (story.field comment, sacctmgr modify job on a job that has ended).
// preemptctl asks sacct for sacct_delimiter(nonce), a unit separator around a number drawn
// per command: a line without it is the rest of the previous row's story, never a row.
inline constexpr char kSacctDelimiter = '\x1f';
std::string sacct_delimiter(uint64_t nonce);
std::vector<JobRun> parse_sacct_runs(std::string_view text, std::string_view job_id,
                                     std::string_view delimiter = {&kSacctDelimiter, 1});
// preemptctl report's rows: `sacct -a -D -X --format=<kReportSacctFormat>` over a time range
// (the same delimiter and SLURM_TIME_FORMAT), every job's runs, AllocTRES included. Rows come
// back grouped by JobID in the order first seen, each job's runs by submit time.
inline constexpr std::string_view kReportSacctFormat =
    "JobID,JobIDRaw,User,Account,QOS,Partition,Submit,Eligible,Start,End,State,ExitCode,NodeList,"
    "AllocTRES,AdminComment";
std::vector<JobRun> parse_sacct_all(std::string_view text,
                                    std::string_view delimiter = {&kSacctDelimiter, 1});
// The states preemptctl report asks sacct for (-s): all of them, so that slurmdbd picks the runs
// of the range by their start and end times. Without -s it needs an eligible time before -E,
// and Slurm 22.05 stores none for a job that ends before slurmctld has sent its start (the
// job-end record carries no eligible time; starts go in slurmctld's db-index pass, every 5 s):
// such a short job has Eligible Unknown and a plain -S/-E query never lists it. With the list
// (as_mysql_jobacct_process.c _state_time_string) R takes every run that overlapped the range,
// PD the jobs waiting in it, and each end state the jobs that ended in it without starting.
inline constexpr std::string_view kReportSacctStates = "PD,R,S,CD,CA,F,TO,NF,PR,BF,DL,OOM,RQ,RS,RV";
// `scontrol show job ID` (the multi-line form, SLURM_TIME_FORMAT=%s); nullopt when it shows
// no job.
std::optional<ShownJob> parse_shown_job(std::string_view text);

struct StoryEvent {
  int64_t at = 0;       // epoch seconds; 0: not known
  uint32_t run = 0;     // the restart count of the run it belongs to
  std::string event;    // submitted, started, preempted, signal, exited, ...
  std::string details;  // one line
  std::string nodes;    // started: where
  uint32_t by_job = 0;  // preempted: by which job
  std::string by_user;  // preempted: its owner; paused, resumed: who
  bool operator==(const StoryEvent&) const = default;
};

// The story: runs from sacct (in run order), the job as slurmctld shows it now (nullopt when
// it no longer knows it), and the users of the preempting jobs (job id -> user name; ids not
// in it are shown without a user). Notes come from every run's AdminComment and the shown
// one, each once.
std::vector<StoryEvent> job_story(const std::vector<JobRun>& runs,
                                  const std::optional<ShownJob>& now,
                                  const std::map<uint32_t, std::string>& users);
// The preempting jobs the notes name, to look up their users.
std::vector<uint32_t> preemptors_named(const std::vector<JobRun>& runs,
                                       const std::optional<ShownJob>& now);

// One line per event: "TIME  run N  EVENT  DETAILS" (TIME in UTC, "-" when not known).
std::string format_story_table(const std::vector<StoryEvent>& events);
// One JSON document: {"job":"ID","events":[{"time":"...Z"|null,"epoch":N|null,"run":N,
// "event":"...","details":"...", ...}]}.
std::string format_story_json(std::string_view job_id, const std::vector<StoryEvent>& events);
// `s` as a JSON string literal (quotes included); invalid UTF-8 bytes become U+FFFD.
std::string json_string(std::string_view s);

}  // namespace sp
