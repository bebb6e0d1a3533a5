// Pause and resume (the Determined seed): a user pauses a job to make room and resumes it later
// from its checkpoint. Pause of a running job = its checkpoint signal and grace (the path a
// preemption takes), then a requeue *held*; of a pending job = a hold. Resume = the release of
// that hold. Pure: job_submit/preempt's job_modify decides and applies (slurmctld decides, so
// no client can bypass it; preemptctl is only a client), and the watcher requeues a pausing
// job held instead of eligible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pause_mark.hpp"

namespace sp {

// The request preemptctl sends as the Comment of `scontrol update JobId=...`. job_modify takes
// it out of the update: the job's comment never changes.
//   "slurm-preempt:pause"  "slurm-preempt:pause grace=30"  "slurm-preempt:resume"
//   "slurm-preempt:finished" (the job's work is done: an exit 0 in a grace is not requeued)
inline constexpr std::string_view kPauseRequestPrefix = "slurm-preempt:";
struct PauseRequest {
  enum class Kind : uint8_t { Pause, Resume, Finished };
  Kind kind = Kind::Pause;
  int64_t grace_s = -1;  // pause only; -1: the job's own checkpoint grace
  bool operator==(const PauseRequest&) const = default;
};
std::string encode_pause_request(const PauseRequest& r);
// Whether the comment is meant for us at all (then a malformed one is refused, never stored).
bool is_pause_request(std::string_view comment);
std::optional<PauseRequest> decode_pause_request(std::string_view comment);

// A pause is under way in this run: the last mark is a pause made during the run, and the job
// is in the grace it started.
bool pausing(const PauseMark& m, int64_t run_start, int64_t preempt_time);

// The job, as the decision needs it.
struct PauseJobView {
  enum class State : uint8_t { Pending, Running, Suspended, Finished };
  State state = State::Finished;
  bool batch = false;
  bool requeue = false;          // may be requeued (--requeue, or the cluster default)
  bool managed = false;          // holds a checkpoint promise (job_submit gave it one)
  int64_t promise_grace_s = -1;  // its promised grace
  bool held = false;             // priority 0 (pending)
  // A hold Slurm lets someone who is not an operator release: the user's own (JobHeldUser), or
  // a deleted reservation's. An administrator's hold on a job its user paused is the
  // administrator's to lift.
  bool user_hold = false;
  int64_t preempt = 0;  // Slurm's preempt time: in a grace (preemption or pause)
  int64_t start = 0;    // this run's start
  uint32_t owner = 0;
  bool het = false;  // a component of a heterogeneous job
  // A preemption of it requeues it (slurm_job_preempt_mode is REQUEUE): Slurm's own pass may
  // end a pause's grace before the watcher does, and then preempts it as its mode says.
  bool preempt_requeues = false;
  PauseMark mark;
};
// Who asks. Slurm's rule for requeue: the owner, a coordinator of the job's account, an
// operator or administrator (root included).
struct PauseRequester {
  uint32_t uid = 0;
  bool operator_ = false;
  bool coordinator = false;
};

// What slurmctld holds in memory about a requester's name. Each is read under Slurm's locks
// (job_modify runs inside the job write lock), so none is a passwd lookup: with LDAP or sssd
// that may wait for the network.
struct RequesterNames {
  uint32_t uid = 0;
  uint32_t owner_uid = 0;
  std::string_view owner_name;  // the job record's user_name (Slurm sets it at the job's start)
  std::string_view db_name;     // the accounting database's user of `uid` ("" if none)
  uint32_t slurm_user_id = 0;   // SlurmUser
  std::string_view slurm_user_name;
};

// The name a pause note and slurmctld.log give the requester: the job's own user name when the
// owner asks, else the database's, "root" for uid 0, SlurmUser's, else the uid in digits.
std::string requester_name(const RequesterNames& n);

enum class PauseOutcome : uint8_t {
  HoldPending,    // pending: hold it (Slurm's own hold: user or admin by who asks)
  StartPause,     // running: checkpoint signal and grace now, requeued held at its end
  AlreadyPaused,  // nothing to do (idempotent)
  Release,        // resume: release the hold
  MarkFinished,   // finished: note it in the job's story (the watcher reads it)
  Refused,
};
enum class PauseError : uint8_t {
  None,
  NotAllowed,      // not the owner, a coordinator or an operator
  Finished,        // the job has ended
  Interactive,     // salloc/srun allocations cannot be requeued
  NoRequeue,       // submitted with --no-requeue
  NoCheckpoint,    // no checkpoint promise: nothing would tell it to save
  GraceTooLong,    // above the job's promised grace
  BeingPreempted,  // already in a preemption's grace
  NotPaused,       // resume of a job that was not paused
  StillPausing,    // resume while the pause's grace runs
  AdminPause,      // resume of an administrator's pause by a user
  AdminHold,       // resume of a paused job an administrator has held since, by a user
  Suspended,       // suspended (scontrol suspend): its grace would run out while it cannot save
  NotRunning,      // finished: said of a job that is not running
  HetJob,          // pause of a heterogeneous job's component: Slurm preempts them together
  PreemptCancels,  // its preemption mode is not REQUEUE: Slurm could end it for good
};
struct PauseDecision {
  PauseOutcome outcome = PauseOutcome::Refused;
  PauseError error = PauseError::None;
  int64_t grace_s = 0;  // StartPause
};
PauseDecision decide_pause(const PauseJobView& job, const PauseRequester& who,
                           const PauseRequest& req);
// One line for a refusal, for the log and for preemptctl: why, and what to do instead
// (`promise_grace_s` < 0: not known).
std::string pause_error_text(PauseError e, uint32_t job_id, int64_t promise_grace_s);

// ---- preemptctl's side (a client: slurmctld decides) ----------------------------------------

// "123" or "123_4".
bool valid_job_id(std::string_view id);
// squeue's id of a job record as the ids of its tasks: "123" and "123_4" as they are,
// "123_[1-3,7]" as 123_1, 123_2, 123_3, 123_7. Empty when malformed or over `max` tasks.
std::vector<std::string> expand_array_id(std::string_view id, std::size_t max = 100000);
// The refusal behind Slurm's error text for a request (what job_modify returned), or None
// when the text is not one of them. `admin_mark`: the job's last mark is an admin's pause.
PauseError pause_error_from_slurm(std::string_view message, PauseRequest::Kind kind,
                                  bool admin_mark);
// What preemptctl does with a refused job update, having waited `waited_ms` since it first sent
// it: SendAgain (kUpdateRetryWaitMs later) when slurmctld asked for that, having not yet had the
// job's database index back from slurmdbd (ESLURM_JOB_SETTING_DB_INX: "the DB index is being
// set", as after a slurmctld restart or while slurmdbd is slow or stopped; slurmctld itself
// waits 5 s before it answers so), while `budget_ms` is not spent; GiveUp once it is; Report
// any other refusal, as it is.
enum class RefusedUpdate : uint8_t { Report, SendAgain, GiveUp };
inline constexpr int64_t kUpdateRetryWaitMs = 1000;
inline constexpr int64_t kUpdateRetryBudgetMs = 60000;
RefusedUpdate after_refused_update(std::string_view message, int64_t waited_ms,
                                   int64_t budget_ms = kUpdateRetryBudgetMs);
// preemptctl's one line for such a refusal, about job `job` ("123", "123_4"): when it starts
// waiting (`given_up` false), and when `waited_s` passed with no answer but the refusal.
std::string send_again_text(std::string_view job, int64_t waited_s, bool given_up);
// Whether a job squeue lists as STATE with REASON reached what was asked: paused = pending
// and held (JobHeldUser or JobHeldAdmin); resumed = running, or pending and not held.
bool reached(PauseRequest::Kind kind, std::string_view state, std::string_view reason);
// The grace a pause note announced ("..., grace 30 s"), -1 when none.
int64_t noted_pause_grace(std::string_view admin_comment);

}  // namespace sp
