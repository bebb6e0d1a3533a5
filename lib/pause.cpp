#include "pause.hpp"

#include <charconv>
#include <ctime>

#include "checkpoint.hpp"
#include "units.hpp"

namespace sp {
namespace {

constexpr std::string_view kPauseWord = "pause";
constexpr std::string_view kResumeWord = "resume";
constexpr std::string_view kFinishedWord = "finished";
constexpr std::string_view kGraceKey = " grace=";
constexpr int64_t kMaxPauseGraceS = int64_t{24} * 3600;

}  // namespace

std::string encode_pause_request(const PauseRequest& r) {
  std::string out(kPauseRequestPrefix);
  if (r.kind == PauseRequest::Kind::Resume) return out.append(kResumeWord);
  if (r.kind == PauseRequest::Kind::Finished) return out.append(kFinishedWord);
  out.append(kPauseWord);
  if (r.grace_s >= 0) out.append(kGraceKey).append(std::to_string(r.grace_s));
  return out;
}

bool is_pause_request(std::string_view comment) {
  return comment.substr(0, kPauseRequestPrefix.size()) == kPauseRequestPrefix;
}

std::optional<PauseRequest> decode_pause_request(std::string_view comment) {
  if (!is_pause_request(comment)) return std::nullopt;
  std::string_view rest = comment.substr(kPauseRequestPrefix.size());
  PauseRequest r;
  if (rest == kResumeWord) {
    r.kind = PauseRequest::Kind::Resume;
    return r;
  }
  if (rest == kFinishedWord) {
    r.kind = PauseRequest::Kind::Finished;
    return r;
  }
  if (rest.substr(0, kPauseWord.size()) != kPauseWord) return std::nullopt;
  rest.remove_prefix(kPauseWord.size());
  if (rest.empty()) return r;
  if (rest.substr(0, kGraceKey.size()) != kGraceKey) return std::nullopt;
  rest.remove_prefix(kGraceKey.size());
  int64_t g = -1;
  const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), g);
  if (rest.empty() || ec != std::errc() || p != rest.data() + rest.size() || g < 0 ||
      g > kMaxPauseGraceS) {
    return std::nullopt;
  }
  r.grace_s = g;
  return r;
}

bool pausing(const PauseMark& m, int64_t run_start, int64_t preempt_time) {
  return m.paused && m.running && preempt_time != 0 && m.at != 0 && m.at >= run_start;
}

PauseDecision decide_pause(const PauseJobView& j, const PauseRequester& who,
                           const PauseRequest& req) {
  PauseDecision d;
  auto refuse = [&](PauseError e) {
    d.outcome = PauseOutcome::Refused;
    d.error = e;
    return d;
  };
  if (who.uid != j.owner && !who.operator_ && !who.coordinator) {
    return refuse(PauseError::NotAllowed);
  }
  if (j.state == PauseJobView::State::Finished) return refuse(PauseError::Finished);
  if (req.kind == PauseRequest::Kind::Finished) {
    if (j.state != PauseJobView::State::Running) return refuse(PauseError::NotRunning);
    d.outcome = PauseOutcome::MarkFinished;
    return d;
  }
  const bool under_way =
      j.state == PauseJobView::State::Running && pausing(j.mark, j.start, j.preempt);
  if (req.kind == PauseRequest::Kind::Resume) {
    if (under_way) return refuse(PauseError::StillPausing);
    if (j.state != PauseJobView::State::Pending || !j.held || !j.mark.paused) {
      return refuse(PauseError::NotPaused);
    }
    if (j.mark.admin && !who.operator_) return refuse(PauseError::AdminPause);
    if (!j.user_hold && !who.operator_) return refuse(PauseError::AdminHold);
    d.outcome = PauseOutcome::Release;
    return d;
  }
  // Slurm ends a heterogeneous job's grace for all its components at once (preempt.c
  // _job_check_grace), and a grace started on one component alone crashes slurmctld there.
  // (A resume only releases a hold: it stays allowed, for a hold set some other way.)
  if (j.het) return refuse(PauseError::HetJob);
  if (j.state == PauseJobView::State::Pending) {
    d.outcome = j.held ? PauseOutcome::AlreadyPaused : PauseOutcome::HoldPending;
    return d;
  }
  if (under_way) {
    d.outcome = PauseOutcome::AlreadyPaused;
    return d;
  }
  if (j.state == PauseJobView::State::Suspended) return refuse(PauseError::Suspended);
  if (!j.batch) return refuse(PauseError::Interactive);
  if (!j.requeue) return refuse(PauseError::NoRequeue);
  if (!j.managed || j.promise_grace_s < 0) return refuse(PauseError::NoCheckpoint);
  if (j.preempt != 0) return refuse(PauseError::BeingPreempted);
  if (!j.preempt_requeues) return refuse(PauseError::PreemptCancels);
  if (req.grace_s > j.promise_grace_s) return refuse(PauseError::GraceTooLong);
  d.outcome = PauseOutcome::StartPause;
  d.grace_s = req.grace_s >= 0 ? req.grace_s : j.promise_grace_s;
  return d;
}

std::string requester_name(const RequesterNames& n) {
  if (n.uid == n.owner_uid && !n.owner_name.empty()) return std::string(n.owner_name);
  if (!n.db_name.empty()) return std::string(n.db_name);
  if (n.uid == 0) return "root";
  if (n.uid == n.slurm_user_id && !n.slurm_user_name.empty()) {
    return std::string(n.slurm_user_name);
  }
  return std::to_string(n.uid);
}

std::string pause_error_text(PauseError e, uint32_t job_id, int64_t promise_grace_s) {
  const std::string job = "job " + std::to_string(job_id);
  switch (e) {
    case PauseError::None: return "";
    case PauseError::NotAllowed:
      return job +
             ": only its owner, a coordinator of its account or an administrator may "
             "pause or resume it";
    case PauseError::Finished:
      return job + " has ended: there is nothing to pause, resume or mark finished";
    case PauseError::Interactive:
      return job +
             " is an interactive allocation (salloc/srun), which Slurm cannot requeue: "
             "end it yourself after saving, or submit the work with sbatch to pause it";
    case PauseError::NoRequeue:
      return job +
             " was submitted with --no-requeue: pausing would end it for good; "
             "scontrol update JobId=" +
             std::to_string(job_id) + " Requeue=1 first, then pause it";
    case PauseError::NoCheckpoint:
      return job +
             " has no checkpoint promise, so nothing would tell it to save: submit with "
             "--checkpoint-signal (or a preemptible QOS or class), or use scontrol "
             "requeuehold to stop it without saving";
    case PauseError::GraceTooLong:
      return job + ": --grace is above the " +
             (promise_grace_s >= 0 ? std::to_string(promise_grace_s) + " s"
                                   : std::string("grace")) +
             " it was promised; ask for at most that";
    case PauseError::BeingPreempted:
      return job +
             " is being preempted already: it will be requeued after its grace; pause "
             "it once it is pending";
    case PauseError::NotPaused:
      return job +
             " is not paused: only a paused job can be resumed (scontrol release "
             "releases other holds)";
    case PauseError::StillPausing:
      return job +
             " is still saving its checkpoint: resume it once it is held (squeue shows "
             "it PENDING)";
    case PauseError::AdminPause:
      return job + " was paused by an administrator: ask one to resume it";
    case PauseError::AdminHold:
      return job +
             " is held by an administrator (JobHeldAdmin, or another hold than its user's): "
             "ask one to release it";
    case PauseError::Suspended:
      return job + " is suspended: resume it first (scontrol resume), then pause it";
    case PauseError::HetJob:
      return job +
             " is part of a heterogeneous job, which pause does not take: have it save its "
             "work, then end or requeue it yourself";
    case PauseError::PreemptCancels:
      return job +
             ": Slurm's preemption mode for it is not REQUEUE (its QOS' PreemptMode, else "
             "slurm.conf's; off under PreemptType=preempt/none), so Slurm could end the pause's "
             "grace by killing it; ask an administrator for PreemptMode=requeue";
    case PauseError::NotRunning:
      return job +
             " is not running: only a running job can say its work is finished (run "
             "preemptctl finished inside the job, before it exits)";
  }
  return job + ": refused";
}

bool valid_job_id(std::string_view id) {
  auto digits = [](std::string_view s) {
    if (s.empty() || s.size() > 10) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  const auto us = id.find('_');
  if (us == std::string_view::npos) return digits(id);
  return digits(id.substr(0, us)) && digits(id.substr(us + 1));
}

PauseError pause_error_from_slurm(std::string_view m, PauseRequest::Kind kind, bool admin_mark) {
  auto has = [&](std::string_view s) { return m.find(s) != std::string_view::npos; };
  const bool resume = kind == PauseRequest::Kind::Resume;
  if (has("Access/permission denied")) {
    return resume && admin_mark ? PauseError::AdminPause : PauseError::NotAllowed;
  }
  if (has("already completing or completed")) return PauseError::Finished;
  if (has("Only batch jobs")) return PauseError::Interactive;
  if (has("presently disabled")) return PauseError::NoRequeue;
  if (has("not supported on this system")) return PauseError::NoCheckpoint;
  if (has("Invalid time specified")) return PauseError::GraceTooLong;
  if (has("can not be altered now")) {
    return resume ? PauseError::StillPausing : PauseError::BeingPreempted;
  }
  if (has("no longer pending execution")) return PauseError::NotPaused;
  if (has("Job is current suspended")) return PauseError::Suspended;
  if (has("Job is in held state")) return PauseError::AdminHold;
  if (has("Job is not running")) return PauseError::NotRunning;
  if (has("component of heterogeneous job")) return PauseError::HetJob;
  if (has("Invalid qos specification")) return PauseError::PreemptCancels;
  return PauseError::None;
}

RefusedUpdate after_refused_update(std::string_view message, int64_t waited_ms, int64_t budget_ms) {
  if (message.find("the DB index is being set") == std::string_view::npos) {
    return RefusedUpdate::Report;
  }
  return waited_ms < budget_ms ? RefusedUpdate::SendAgain : RefusedUpdate::GiveUp;
}

std::string send_again_text(std::string_view job, int64_t waited_s, bool given_up) {
  const std::string head = "job " + std::string(job) + ": ";
  if (!given_up) {
    return head +
           "slurmctld cannot change it until slurmdbd has recorded it (\"the DB index is being "
           "set\"): sending the request again for up to " +
           std::to_string(waited_s) + " s";
  }
  return head + "slurmctld still refused it after " + std::to_string(waited_s) +
         " s, waiting for slurmdbd to record the job: check that slurmdbd runs (sacctmgr show "
         "cluster answers), then run this again";
}

bool reached(PauseRequest::Kind kind, std::string_view state, std::string_view reason) {
  const bool held = reason == "JobHeldUser" || reason == "JobHeldAdmin";
  if (kind == PauseRequest::Kind::Pause) return state == "PENDING" && held;
  return state == "RUNNING" || (state == "PENDING" && !held);
}

int64_t noted_pause_grace(std::string_view admin_comment) {
  const std::size_t p = rfind_note(admin_comment, kPausedByMark);
  if (p == std::string_view::npos) return -1;
  std::string_view entry = admin_comment.substr(p);
  entry = entry.substr(0, entry.find(';'));
  const std::size_t g = entry.find(", grace ");
  if (g == std::string_view::npos) return -1;
  std::string_view n = entry.substr(g + 8);
  n = n.substr(0, n.find(' '));
  int64_t v = -1;
  const auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
  return ec == std::errc() && ptr == n.data() + n.size() ? v : -1;
}

std::vector<std::string> expand_array_id(std::string_view id, std::size_t max) {
  const auto open = id.find("_[");
  if (open == std::string_view::npos) {
    if (valid_job_id(id)) return {std::string(id)};
    return {};
  }
  const std::string_view base = id.substr(0, open);
  if (!valid_job_id(base) || id.back() != ']') return {};
  std::string_view ranges = id.substr(open + 2, id.size() - open - 3);
  std::vector<std::string> out;
  auto number = [](std::string_view s, uint32_t& v) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  while (!ranges.empty()) {
    const auto comma = ranges.find(',');
    const std::string_view r = ranges.substr(0, comma);
    ranges = comma == std::string_view::npos ? std::string_view() : ranges.substr(comma + 1);
    const auto dash = r.find('-');
    uint32_t lo = 0, hi = 0;
    if (!number(r.substr(0, dash), lo)) return {};
    if (dash == std::string_view::npos) {
      hi = lo;
    } else if (!number(r.substr(dash + 1), hi) || hi < lo) {
      return {};
    }
    if (hi - lo >= max || out.size() + (hi - lo + 1) > max) return {};
    for (uint32_t t = lo;; ++t) {
      out.push_back(std::string(base) + "_" + std::to_string(t));
      if (t == hi) break;
    }
  }
  return out;
}

}  // namespace sp
