#include "recalc.hpp"

#include <chrono>

#include "priority_adapter.hpp"

extern "C" {
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/locks.h"
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

Recalculator::Recalculator(LogSink& log, const PriorityState& state, const Clock& clock,
                           Compute compute)
    : state_(state),
      clock_(clock),
      compute_(compute),
      thread_(
          log, "priority recalculation",
          [] {
            return std::chrono::milliseconds(
                1000 * std::max<uint32_t>(1, slurm_conf.priority_calc_period));
          },
          [this] { recalculate_all(); }) {}

void Recalculator::recalculate_all() {
  const PriorityState::Snapshot s = state_.snapshot();
  if (!s.policy) return;
  slurmctld_lock_t locks = {NO_LOCK, WRITE_LOCK, NO_LOCK, READ_LOCK, NO_LOCK};
  assoc_mgr_lock_t qos_lock = {};
  qos_lock.qos = READ_LOCK;
  lock_slurmctld(locks);
  assoc_mgr_lock(&qos_lock);
  const int64_t now = clock_.now();
  ListIterator it = list_iterator_create(job_list);
  while (auto* job = static_cast<job_record_t*>(list_next(it))) {
    if (!IS_JOB_PENDING(job) || job->priority == 0 || job->direct_set_prio) continue;
    job->priority = compute_(*job, s, now);
  }
  list_iterator_destroy(it);
  last_job_update = static_cast<time_t>(now);
  assoc_mgr_unlock(&qos_lock);
  unlock_slurmctld(locks);
}

List factors_list(const priority_factors_request_msg_t& req, uid_t uid) {
  slurmctld_lock_t locks = {NO_LOCK, READ_LOCK, NO_LOCK, READ_LOCK, NO_LOCK};
  lock_slurmctld(locks);
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
  unlock_slurmctld(locks);
  if (list_count(out) == 0) FREE_NULL_LIST(out);
  return out;
}

}  // namespace sp
