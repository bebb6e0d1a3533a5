#include "recalc.hpp"

#include <sys/prctl.h>

#include <chrono>

#include "priority_adapter.hpp"
#include "slurm_locks.hpp"

extern "C" {
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/locks.h"
}

// slurmctld's; weak so that sshare and sprio, which load this plugin too, can.
extern "C" {
extern List job_list __attribute__((weak));
extern time_t last_job_update __attribute__((weak));
}

namespace sp {

void PriorityState::set(std::shared_ptr<const Policy> policy, const Weights& w) {
  std::lock_guard<std::mutex> lk(m_);
  s_.policy = std::move(policy);
  s_.weights = w;
}

PriorityState::Snapshot PriorityState::snapshot() const {
  std::lock_guard<std::mutex> lk(m_);
  return s_;
}

bool PriorityState::ready() const {
  std::lock_guard<std::mutex> lk(m_);
  return s_.policy != nullptr;
}

std::string PriorityState::describe() const {
  const Snapshot s = snapshot();
  const Weights& w = s.weights;
  return "policy " + (s.policy ? s.policy->source : std::string("(none)")) +
         ", weights age=" + std::to_string(w.age) + " fairshare=" + std::to_string(w.fairshare) +
         " qos=" + std::to_string(w.qos) + " partition=" + std::to_string(w.partition) +
         " job_size=" + std::to_string(w.job_size) + " class=" + std::to_string(w.priority_class) +
         " max_age=" + std::to_string(w.max_age_s) + "s";
}

double dampening_factor() {
  return slurm_conf.fs_dampening_factor > 1 ? slurm_conf.fs_dampening_factor : 1.0;
}

Recalculator::Recalculator(LogSink& log, const PriorityState& state, const Clock& clock,
                           Compute compute, UsageTracker& usage)
    : log_(log),
      state_(state),
      clock_(clock),
      compute_(compute),
      usage_(usage),
      thread_(
          log, "priority recalculation",
          [this] {
            return std::chrono::milliseconds(
                1000 * std::max<int64_t>(1, state_.snapshot().weights.calc_period_s));
          },
          [this] { pass(); }) {
  thread_.wake();  // the first pass at once: fair-share factors before the first scheduling
}

void Recalculator::pass() {
  if (!named_) {  // for top and the e2e benchmark, which reads this thread's CPU time
    prctl(PR_SET_NAME, "sp_fairshare", 0, 0, 0);
    named_ = true;
  }
  const PriorityState::Snapshot s = state_.snapshot();
  if (!s.policy || &job_list == nullptr || job_list == nullptr) return;
  const auto t0 = std::chrono::steady_clock::now();
  size_t pending = 0;
  {
    slurmctld_lock_t locks = {NO_LOCK, WRITE_LOCK, NO_LOCK, READ_LOCK, NO_LOCK};
    assoc_mgr_lock_t alocks = {};
    alocks.assoc = WRITE_LOCK;
    alocks.qos = WRITE_LOCK;
    alocks.tres = READ_LOCK;
    const CtldLock ctld(locks);
    const AssocLock assoc(alocks);
    const int64_t now = clock_.now();
    usage_.update(now, s.weights, dampening_factor());
    ListIterator it = list_iterator_create(job_list);
    while (auto* job = static_cast<job_record_t*>(list_next(it))) {
      if (!IS_JOB_PENDING(job) || job->priority == 0 || job->direct_set_prio) continue;
      job->priority = compute_(*job, s, now);
      ++pending;
    }
    list_iterator_destroy(it);
    last_job_update = static_cast<time_t>(now);
  }  // the locks go here, in reverse order: no file is written while they are held
  usage_.save();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  log_.log_debug("usage and " + std::to_string(pending) + " pending priorities recalculated in " +
                 std::to_string(us) + " us");
}

List factors_list(const priority_factors_request_msg_t& req, uid_t uid) {
  slurmctld_lock_t locks = {NO_LOCK, READ_LOCK, NO_LOCK, READ_LOCK, NO_LOCK};
  const CtldLock lock(locks);
  List out = list_create(slurm_destroy_priority_factors_object);
  const time_t now = time(nullptr);
  ListIterator it = list_iterator_create(job_list);
  while (auto* job = static_cast<job_record_t*>(list_next(it))) {
    if (!listed_for_sprio(*job, req, now)) continue;
    if ((slurm_conf.private_data & PRIVATE_DATA_JOBS) && job->user_id != uid &&
        !validate_operator(uid)) {
      continue;  // PrivateData=jobs: only the owner and operators see a job's factors
    }
    auto* obj = static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
    slurm_copy_priority_factors_object(obj, job->prio_factors);
    xfree(obj->partition);
    obj->partition = job->part_ptr->name;  // not freed by the list, as in priority/multifactor
    obj->job_id = job->job_id;
    obj->user_id = job->user_id;
    list_append(out, obj);
  }
  list_iterator_destroy(it);
  if (list_count(out) == 0) FREE_NULL_LIST(out);
  return out;
}

}  // namespace sp
