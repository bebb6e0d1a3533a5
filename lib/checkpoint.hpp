// Checkpoint signals: what a job is promised before it is preempted, and the rules the node side
// follows to keep that promise. Pure; no Slurm headers.
//
// How the pieces fit (README "Checkpoint signals" says the same for admins):
//  - job_submit resolves a JobCheckpoint for each preemptible job (policy defaults, the user's
//    --checkpoint-signal / --checkpoint-dir, or a --signal it takes over) and passes it to the
//    nodes in the job's environment (kEnv*) and to slurmctld in the job's SPANK environment.
//  - It sets the job's warn_signal to kTriggerPreempt with warn_time 0, so that at grace start
//    Slurm sends that private signal (preempt_send_user_signal) instead of SIGTERM, and never
//    sends it as a time-limit warning.
//  - Every task the SPANK plugin launches ignores the trigger signals; one small "sentinel"
//    process per step and node catches them and delivers the user's checkpoint signal itself,
//    to the processes that handle it (should_deliver()).
//  - The controller's watcher sends the triggers to the other steps, the time-limit warning,
//    enforces the grace, and requeues a preempted job that exits during its grace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy.hpp"

namespace sp {

// Private real-time signals (SIGRTMIN is 34 on Linux/glibc, SIGRTMAX 64). No program is
// expected to use them; every task of a managed job ignores them.
inline constexpr int kTriggerPreempt = 61;
inline constexpr int kTriggerTimeLimit = 62;
inline constexpr int kTriggerPause = 63;

enum class NoticeReason : uint8_t { Preemption, TimeLimit, Pause };
std::optional<NoticeReason> reason_for_trigger(int signo);
std::string_view reason_name(NoticeReason r);  // "preemption", "time-limit", "pause"
// Whether a step's sentinel acts on a trigger for `reason`, having acted on one for it before
// in this run or not: a preemption's or a pause's once (Slurm and the watcher may both send
// the preemption one); a time-limit one is time_limit_notice's to decide.
bool acts_on_trigger(NoticeReason reason, bool acted_before);

// A step's sentinel and a time-limit trigger. The watcher sends one per time limit, and another
// only for a limit raised after it (lib/watch.hpp time_limit_due), or again if it lost its
// record of the first (slurmctld died before saving it). `shown_end`: the job's end as
// slurmctld shows it now (0: not known, show_job failed); `acted_end`: the end of the last one
// acted on in this run (0: none yet). Acted on: the first; a later one for a later end (a
// duplicate for the same end is not); one whose end is not known (a notice twice is better
// than none). The deadline is the shown end (the notice may come late: a limit raised within
// the lead), else now + lead.
struct TimeLimitNotice {
  bool act = false;
  int64_t deadline = 0;
};
TimeLimitNotice time_limit_notice(int64_t shown_end, int64_t acted_end, int64_t now,
                                  int64_t lead_s);

// Largest grace a user may ask for with @SECONDS (one day); more is a typo, not a plan. The
// policy's graces are bounded by it too (kMaxGraceS), so every promise can be decoded.
inline constexpr int64_t kMaxCheckpointSeconds = 86400;
static_assert(kMaxGraceS <= kMaxCheckpointSeconds);

// Whether a job can be asked to checkpoint with `signo`: a Linux signal (1 to 64) a process
// can catch (not KILL or STOP; not CONT, which also resumes; not 32 or 33, which glibc keeps
// for itself) and not one of the private triggers above.
bool deliverable_signal(int signo);

// --checkpoint-signal=SIG[@SECONDS], parsed.
struct CheckpointSignalOption {
  int signal = 0;
  int64_t seconds = -1;  // -1: not given
  bool operator==(const CheckpointSignalOption&) const = default;
};
// nullopt and `error` set (one line, what is wrong and what is accepted) for bad input.
std::optional<CheckpointSignalOption> parse_checkpoint_signal(std::string_view text,
                                                              std::string* error);
// The one check of a checkpoint signal, whichever option carries it: parse_checkpoint_signal
// ends here, and so does a --signal the promise takes over (resolve_checkpoint). `option`
// ("--signal") and `given` (the value as the user gave it) name it in the message; `seconds`
// is -1 when not given, else 1 to kMaxCheckpointSeconds.
std::optional<CheckpointSignalOption> check_checkpoint_signal(int signo, int64_t seconds,
                                                              std::string_view option,
                                                              std::string_view given,
                                                              std::string* error);
// An absolute path without control characters (NUL, newline, ...) or "..", at most 4095
// bytes; false and `error` set otherwise.
bool valid_checkpoint_dir(std::string_view path, std::string* error);

// What a job is promised, as resolved at submission.
struct JobCheckpoint {
  int signal = 0;               // the user-visible checkpoint signal
  int64_t grace_s = 0;          // preemption: seconds between the signal and the kill
  int64_t lead_s = 0;           // time limit: seconds before the end the signal comes; 0: none
  bool requeue = false;         // a preemption requeues the job (else cancels it)
  bool gpu_steps_only = false;  // steps: gpu
  std::string dir;              // --checkpoint-dir; "" when none
  bool operator==(const JobCheckpoint&) const = default;
};

// The SPANK environment entry (without the SPANK_ prefix Slurm adds) that carries the
// resolved JobCheckpoint to slurmctld's watcher and to prolog/epilog scripts.
inline constexpr std::string_view kControlEnvName = "SLURM_PREEMPT_CHECKPOINT";
// "signal=10,grace=60,lead=60,requeue=1,steps=gpu[,dir=PATH]" (dir last: it may hold commas).
// job_submit removes every entry of this name from each submission before it sets its own,
// so only slurm-preempt writes it; decode_checkpoint still bounds everything it reads
// (a deliverable signal, grace and lead of 0 to kMaxCheckpointSeconds, requeue 0 or 1, each
// key once, a valid dir, at most kMaxEncodedCheckpoint bytes) and returns nullopt otherwise.
inline constexpr std::size_t kMaxEncodedCheckpoint = 4096 + 128;
std::string encode_checkpoint(const JobCheckpoint& c);
std::optional<JobCheckpoint> decode_checkpoint(std::string_view text);

// Environment of every task of a managed job.
inline constexpr std::string_view kEnvSignal = "SLURM_CHECKPOINT_SIGNAL";    // "USR1"
inline constexpr std::string_view kEnvGrace = "SLURM_CHECKPOINT_GRACE";      // seconds
inline constexpr std::string_view kEnvLead = "SLURM_CHECKPOINT_LEAD";        // seconds
inline constexpr std::string_view kEnvRequeue = "SLURM_CHECKPOINT_REQUEUE";  // 1 | 0
inline constexpr std::string_view kEnvSteps = "SLURM_CHECKPOINT_STEPS";      // gpu | all
inline constexpr std::string_view kEnvNotice = "SLURM_CHECKPOINT_NOTICE";    // notice path
// The checkpoint directory goes in policy.checkpoint.dir_env (SLURM_CHECKPOINT_DIR).

// The variables above for one job, NAME and value: what job_submit puts in a batch job's
// environment, and what an interactive allocation (srun, salloc) gets from slurmctld.
std::vector<std::pair<std::string, std::string>> checkpoint_environment(const JobCheckpoint& c,
                                                                        const CheckpointPolicy& p);

// The inverse of checkpoint_environment(), on the node side: the promise a task finds in its
// environment. `get(NAME)` returns the variable's value, "" when unset; `dir_env` is the
// policy's checkpoint.dir_env as the job got it (SLURM_CHECKPOINT_DIR by default; a site that
// renamed it still has the notice path, whose directory is the checkpoint directory). nullopt
// when the job has no promise, or when a value is malformed or out of bounds (a task's
// environment is the user's to change: nothing here is trusted further than its bounds).
template <typename Get>
std::optional<JobCheckpoint> checkpoint_from_environment(const Get& get, std::string_view dir_env);
std::optional<JobCheckpoint> checkpoint_from_values(std::string_view signal, std::string_view grace,
                                                    std::string_view lead, std::string_view requeue,
                                                    std::string_view steps, std::string_view dir,
                                                    std::string_view notice);
template <typename Get>
std::optional<JobCheckpoint> checkpoint_from_environment(const Get& get, std::string_view dir_env) {
  return checkpoint_from_values(get(kEnvSignal), get(kEnvGrace), get(kEnvLead), get(kEnvRequeue),
                                get(kEnvSteps), get(dir_env), get(kEnvNotice));
}

// Resolve the promise for a submission. `rule` is the job's QOS rule (nullptr: not governed).
// `user_signal`/`user_seconds`: a --signal the user gave (0: none). On a job that gets a
// promise (a preemptible one, or one with --checkpoint-dir) the promise replaces the job's
// --signal, so the --signal is checked like --checkpoint-signal (check_checkpoint_signal) and
// becomes the checkpoint signal when no --checkpoint-signal is given. `requeue`: whether a
// preemption will requeue the job. Returns nullopt when the job needs nothing (no option, and
// not preemptible or its QOS grace is 0); sets `error` (one line) when the options cannot be
// honoured.
struct CheckpointRequest {
  std::string_view signal_option;  // raw --checkpoint-signal value; empty: not given
  std::string_view dir_option;     // raw --checkpoint-dir value; empty: not given
  int user_signal = 0;             // --signal's signal; 0: none
  int64_t user_seconds = 0;        // --signal's @seconds
  bool requeue = false;
};
std::optional<JobCheckpoint> resolve_checkpoint(const CheckpointRequest& req, const Policy& p,
                                                const QosRule* rule, std::string* error);

// The notice a job finds in its checkpoint directory at grace start.
struct Notice {
  NoticeReason reason = NoticeReason::Preemption;
  int64_t deadline = 0;  // epoch seconds of the kill
  bool requeue = false;
  int signal = 0;
  int64_t grace_s = 0;
  uint32_t job_id = 0;
  std::string paused_by;  // a pause: who asked for it ("" when not known)
  bool paused_by_admin = false;
  uint32_t restart_count = 0;  // the run's SLURM_RESTART_COUNT (0: the first run)
  // A preemption: who and why, from the story's note (by_job 0: not known in time).
  uint32_t preempted_by = 0;
  std::string preemptor_qos;      // its QOS: the class, with quotas
  std::string preemptor_account;  // its project
  std::string preempt_reason;     // "owner reclaim", "quota reclaim", "class", "qos"
};
// Shell-sourceable KEY=value lines: SLURM_CHECKPOINT_REASON, ..._DEADLINE, ..._REQUEUE, ...,
// ..._RESTART_COUNT; a preemption whose preemptor is known adds SLURM_CHECKPOINT_PREEMPTED_BY
// (job id), _PREEMPTOR_QOS, _PREEMPTOR_ACCOUNT and _PREEMPT_REASON (owner-reclaim,
// quota-reclaim, class, qos), each only when it is a plain name;
// a pause adds SLURM_CHECKPOINT_PAUSED_BY=NAME (and SLURM_CHECKPOINT_PAUSED_BY_ADMIN=1 for an
// operator's), when the name is a plain user name.
std::string format_notice(const Notice& n);

// The sentinel's process name (/proc/PID/comm), and its name while it adds a preemption's
// preemptor lines to the notice (it looks them up for up to kPreemptorLookupMs after the
// signal). slurmstepd kills what is left of a step once its last task has exited, so at that
// point the SPANK plugin waits, up to kStepEndWaitForNoticeMs, until no sentinel of the step
// has the busy name: a job that exits the moment it is signalled keeps a whole notice.
inline constexpr std::string_view kSentinelComm = "ckpt-sentinel";
inline constexpr std::string_view kSentinelBusyComm = "ckpt-sentinel+";
inline constexpr int kPreemptorLookupMs = 2000;
inline constexpr int kStepEndWaitForNoticeMs = kPreemptorLookupMs + 1000;
// /proc/PID/stat's text: a live sentinel adding the preemptor (its busy name, and a state
// other than zombie or dead: one killed while busy keeps its name until slurmstepd reaps it,
// which it does only after the wait).
bool sentinel_completing_notice(std::string_view proc_stat);

// /proc/PID/status -> the SigCgt mask (bit signo-1 set: the process catches signo). nullopt
// when the field is missing or malformed.
std::optional<uint64_t> parse_sigcgt(std::string_view status);
inline bool catches(uint64_t sigcgt, int signo) {
  return signo >= 1 && signo <= 64 && ((sigcgt >> (signo - 1)) & 1U) != 0;
}

// Which run of which step of a managed job a process belongs to: the SPANK plugin sets
// kEnvStepMark=step_mark(...) in every task of the step (overwriting whatever the task
// inherited: a job submitted from inside another job's step carries that step's variables), and
// the processes the tasks start inherit it. A worker that has left the step's process tree (its
// parent exited: `( cmd & )`, a launcher that double-forks, a daemon) is still known by it.
// Slurm's own SLURM_JOB_ID / SLURM_STEP_ID cannot say it: a het job's tasks all carry the
// leader's job id, and the batch step's tasks keep an inherited SLURM_STEP_ID.
inline constexpr std::string_view kEnvStepMark = "SLURM_PREEMPT_STEP_MARK";
// "JOB.STEP.RESTART", STEP "batch" for the batch step (`step_id` nullopt).
std::string step_mark(uint32_t job_id, std::optional<uint32_t> step_id, uint32_t restart_count);
// Whether /proc/PID/environ (NUL-separated KEY=VALUE) holds kEnvStepMark=`mark`.
bool environ_has_mark(std::string_view environ, std::string_view mark);

// The delivery rule, for one process of a step on one node.
struct ProcessFacts {
  bool is_batch_shell = false;  // the batch script's own process
  bool catches_signal = false;  // SigCgt has the checkpoint signal
  bool slurm_client = false;    // srun/salloc/sattach: they forward signals to whole steps
};
struct StepFacts {
  bool batch = false;     // the batch step
  bool has_gpus = false;  // the step holds GPUs on this node
};
// The checkpoint signal goes to a process that catches it, in any step (steps: all, the
// default), or with steps: gpu only to the batch shell and to processes of steps that hold
// GPUs; never to a Slurm client command (it would forward the signal to every task, handler
// or not).
bool should_deliver(const ProcessFacts& proc, const StepFacts& step, bool gpu_steps_only);

// What a task of a job can see of its job's promise before it execs.
struct TaskPromiseFacts {
  bool signal_env = false;   // kEnvSignal is set, even to something that does not parse
  bool option = false;       // --checkpoint-signal or --checkpoint-dir was given to the step
  bool control_env = false;  // kControlEnvName, with or without Slurm's SPANK_ prefix
};
// Whether the task ignores the trigger signals (kTrigger*): exactly the tasks of managed jobs,
// the only jobs Slurm (their warn_signal) or the watcher send a trigger. Any sign of a
// promise counts, a malformed one too: its job still gets the raw trigger, and a task must
// never die of it. Tasks of other jobs keep the default dispositions.
bool ignores_triggers(const TaskPromiseFacts& t);

// The one-line accounting notes the watcher appends to AdminComment, run by run.
// "preempted at T by JobId=N (qos Q, account A[, REASON]): signal S, grace G s"; REASON is
// preemption_reason()'s ("owner reclaim", "quota reclaim", "class", "qos"), "" when not known.
std::string note_preempted(int64_t at, uint32_t by_job, std::string_view by_qos,
                           std::string_view by_account, const JobCheckpoint& c,
                           std::string_view reason = {});
// `held`: a paused job, requeued held ("requeued held as restart N (paused)").
std::string note_exited_in_grace(int64_t at, int exit_status, bool requeued, uint32_t restart,
                                 bool held = false);
// The job exited 0 in its grace after saying its work is finished (preemptctl finished).
std::string note_exited_finished(int64_t at);
std::string note_killed_at_grace_end(int64_t at, bool requeue, uint32_t restart, bool held = false);
std::string note_requeued_by_job(uint32_t restart);
// A paused job that Slurm requeued itself at its pause's grace end, held by the watcher.
std::string note_requeued_at_pause_end(uint32_t restart);
// A paused job whose run slurmctld lost in a restart, held.
std::string note_run_lost_paused();

// "2026-11-22T10:04:05" in UTC, the form the notes use.
std::string format_utc(int64_t epoch);

}  // namespace sp
