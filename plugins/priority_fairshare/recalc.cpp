#include "recalc.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "ctld_policy.hpp"
#include "fault.hpp"
#include "job_quota.hpp"
#include "priority_adapter.hpp"
#include "slurm_list.hpp"
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

uint32_t compute_priority(RecalcContext& ctx, job_record_t& job, const PriorityState::Snapshot& s,
                          int64_t now, double over_quota, QosTermsMemo* memo) {
  if (job.assoc_ptr == nullptr) {
    ctx.no_assoc.error(*ctx.log, "job " + std::to_string(job.job_id) +
                                     " has no association: fair-share factor 0 (logged once)");
  }
  PriorityInput in = input_of(job, *s.policy, s.weights.favor_small, memo);
  in.over_quota = over_quota;
  const PriorityTerms terms = priority_terms(in, s.weights, now);
  store_terms(job, terms);
  store_partition_priorities(job, terms, s.weights);
  return priority_value(terms);
}

double over_quota_of(RecalcContext& ctx, const job_record_t& job,
                     const PriorityState::Snapshot& s) {
  const Policy& p = *s.policy;
  if (p.quotas.empty()) return 0.0;
  const int project = job_project(p, job);
  if (project < 0 || !job_counted(p, project, job)) return over_quota_factor(0.0);
  const uint64_t gpus = job_gpus(job, ctx.gpu_pos.load());
  const std::lock_guard<std::mutex> lk(ctx.ledger_m);
  return over_quota_factor(ctx.ledger.key(s.policy, job.job_id, project, gpus));
}

namespace {

// The pass' part of the fair division: every pending job of a project, in submission order
// after its project's running GPUs, gets its over-quota key; the ledger keeps them (and what
// each project counted) for priority_p_set until the next pass. Caller holds the job read and
// assoc_mgr's TRES read locks.
void rebuild_over_quota(RecalcContext& ctx, const PriorityState::Snapshot& s) {
  const Policy& p = *s.policy;
  const int gpu_pos = gpu_tres_position_locked();
  ctx.gpu_pos.store(gpu_pos);
  std::vector<uint64_t> used(p.quotas.size(), 0);
  ctx.pass_pending.clear();
  for_each_ro<job_record_t>(job_list, [&](const job_record_t* job) {
    const bool running = IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job);
    const bool pending = IS_JOB_PENDING(job) && job->priority != 0;
    if (!running && !pending) return true;
    const int project = job_project(p, *job);
    if (project < 0 || !job_counted(p, project, *job)) return true;
    if (running) {
      used[static_cast<std::size_t>(project)] += job_gpus(*job, gpu_pos);
    } else {
      ctx.pass_pending.push_back({job->job_id, project, job_gpus(*job, gpu_pos), 0.0});
    }
    return true;
  });
  std::vector<uint64_t> counted = assign_over_quota_keys(p, std::move(used), ctx.pass_pending);
  const std::lock_guard<std::mutex> lk(ctx.ledger_m);
  ctx.ledger.reset(s.policy, std::move(counted), ctx.pass_pending);
}

uint32_t max_boost(const Policy& p) {
  uint32_t m = 0;
  for (const auto& q : p.qos) m = std::max(m, q.boost);
  return m;
}

// On the thread, no Slurm lock held: the reload a reconfigure asked for.
void reload_if_requested(RecalcContext& ctx) {
  if (!ctx.reload_requested.exchange(false)) return;
  time_t stamp = 0;
  {
    const CtldLock conf({READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK});
    stamp = slurm_conf.last_update;
  }
  const SlurmWeights conf = read_slurm_weights(ctx);
  PolicyStore store;
  store.set(ctx.state.snapshot().policy);
  const bool at_start = std::exchange(ctx.reload_at_start, false);
  reload_policy(*ctx.log, store, stamp, at_start ? "at start" : "after reconfigure");
  set_policy(ctx, store.get(), conf);
  ctx.log->log_info((at_start ? "read again at start: " : "reconfigured: ") + ctx.state.describe());
}

void pass(RecalcContext& ctx, const std::atomic<bool>& stopping, bool& named) {
  if (!named) {  // for top and the e2e benchmark, which reads this thread's CPU time
    prctl(PR_SET_NAME, "sp_fairshare", 0, 0, 0);
    named = true;
  }
  reload_if_requested(ctx);
  const PriorityState::Snapshot s = ctx.state.snapshot();
  if (!s.policy || &job_list == nullptr || ctx.usage == nullptr) return;
  const auto t0 = std::chrono::steady_clock::now();
  // Usage first, reading the job list (job read lock): the walk with no assoc_mgr lock, then
  // the usage (decay, the running jobs' accrual, the fair-share factors: a few hundred
  // associations and running jobs, not every job) computed under assoc_mgr's read locks and
  // written under its write locks (UsageTracker::prepare/apply); then the
  // pending jobs' priorities, a slice at a time under the job write lock, each job found again
  // through Slurm's job hash: no write lock is held for the whole list.
  std::vector<uint32_t> ids;
  int64_t now = 0;
  {
    const CtldLock locks({NO_LOCK, READ_LOCK, NO_LOCK, READ_LOCK, NO_LOCK}, "priority usage pass");
    if (stopping.load() || job_list == nullptr) return;
    fault_point("priority recalculation");
    collect_jobs(ids, ctx.pass_running);
    now = ctx.clock.now();
    {  // the pass computed under assoc_mgr's read locks (readers go on)...
      assoc_mgr_lock_t levels = assoc_qos_read();
      levels.tres = READ_LOCK;
      const AssocLock alocks(levels, "priority usage, assoc_mgr read");
      ctx.usage->prepare(now, s.weights, dampening_factor(), ctx.pass_running);
    }
    {  // ...and only written under its write locks
      assoc_mgr_lock_t levels = {};
      levels.assoc = WRITE_LOCK;
      levels.qos = WRITE_LOCK;
      levels.tres = READ_LOCK;
      const AssocLock alocks(levels, "priority usage, assoc_mgr write");
      ctx.usage->apply();
    }
    ctx.pass_running.clear();  // valid only under this hold
    if (!s.policy->quotas.empty()) {
      assoc_mgr_lock_t levels = assoc_qos_read();
      levels.tres = READ_LOCK;
      const AssocLock alocks(levels);
      rebuild_over_quota(ctx, s);
    }
  }
  // Each write-lock hold recalculates jobs until kSliceBudget of wall time has passed (checked
  // every kCheckEvery jobs), so one hold stays near half a millisecond whatever the job count
  // or the machine; the next hold goes on where this one stopped.
  constexpr auto kSliceBudget = std::chrono::microseconds(400);
  constexpr std::size_t kCheckEvery = 32;
  size_t pending = 0;
  std::size_t next = 0;
  while (next < ids.size()) {
    CtldLock locks({NO_LOCK, WRITE_LOCK, NO_LOCK, READ_LOCK, NO_LOCK}, "priority recalculation");
    const AssocLock alocks(assoc_qos_read());
    if (stopping.load() || job_list == nullptr) return;
    const HoldBudget budget(kSliceBudget, kCheckEvery);
    QosTermsMemo memo;  // this hold's: QOS records may change between two holds
    const std::size_t from = next;
    while (next < ids.size()) {
      job_record_t* job = find_job_record(ids[next++]);
      // Started, held or ended since the usage pass: not recalculated.
      if (job != nullptr && IS_JOB_PENDING(job) && job->priority != 0 && !job->direct_set_prio) {
        job->priority = compute_priority(ctx, *job, s, now, over_quota_of(ctx, *job, s), &memo);
        ++pending;
      }
      if (budget.spent(next - from)) break;
    }
    locks.units(next - from);
    last_job_update = static_cast<time_t>(now);
  }
  // Not after fini (a backup's priority_g_fini when it gives control back): the usage file is
  // the other controller's then.
  if (stopping.load()) return;
  ctx.usage->save();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  ctx.log->log_debug("usage and " + std::to_string(pending) +
                     " pending priorities recalculated in " + std::to_string(us) + " us");
}

}  // namespace

SlurmWeights read_slurm_weights(RecalcContext& ctx, ConfLock lock) {
  const slurmctld_lock_t config_read = {READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
  std::string path;
  {
    std::optional<CtldLock> conf;
    if (lock == ConfLock::Take) conf.emplace(config_read);
    path = slurm_conf.slurm_conf ? slurm_conf.slurm_conf : "";
  }
  const auto keys = path.empty() ? std::nullopt : weight_keys_in(path.c_str());  // a file parse
  if (!keys) {
    ctx.conf_unread.error(*ctx.log, "cannot read " + (path.empty() ? "slurm.conf" : path) +
                                        " again to tell PriorityWeight*=0 from no such key: a "
                                        "weight of 0 counts as unset there and the policy's "
                                        "applies (logged once)");
  }
  std::optional<CtldLock> conf;
  if (lock == ConfLock::Take) conf.emplace(config_read);
  return slurm_weights(slurm_conf, keys);
}

void set_policy(RecalcContext& ctx, std::shared_ptr<const Policy> policy,
                const SlurmWeights& conf) {
  const Weights w = policy_weights(*policy, conf);
  if (weights_may_saturate(w, max_boost(*policy))) {
    ctx.saturate.error(*ctx.log,
                       "the priority weights and boosts add up to more than 2^32-1: the highest "
                       "priorities saturate at 4294967294 (logged once)");
  }
  ctx.state.set(std::move(policy), w);
}

Recalculator::Recalculator(const std::shared_ptr<RecalcContext>& ctx)
    : thread_(
          ctx->log, "priority recalculation",
          [ctx] {
            return std::chrono::milliseconds(
                1000 * std::max<int64_t>(1, ctx->state.snapshot().weights.calc_period_s));
          },
          [ctx, named = false](const std::atomic<bool>& stopping) mutable {
            pass(*ctx, stopping, named);
          }) {
  thread_.wake();  // the first pass at once: fair-share factors before the first scheduling
}

namespace {

// Each line's partition name is the list's own copy: slurmctld packs the list after the locks
// are released (proc_req.c _slurm_rpc_get_priority_factors), when a partition deleted
// meanwhile has freed its name. (priority/multifactor lends the partition's own.)
void destroy_factors(void* object) {
  if (object == nullptr) return;
  xfree(static_cast<priority_factors_object_t*>(object)->partition);
  slurm_destroy_priority_factors_object(object);
}

}  // namespace

List factors_list(const priority_factors_request_msg_t& req, uid_t uid, uint32_t weight_partition) {
  const CtldLock locks({NO_LOCK, READ_LOCK, NO_LOCK, READ_LOCK, NO_LOCK}, "sprio factors");
  fault_point("sprio factors");
  OwnedList out(list_create(destroy_factors));
  const time_t now = time(nullptr);
  for_each_ro<job_record_t>(job_list, [&](const job_record_t* job) {
    // One line per partition the job is queued in (priority/multifactor's _filter_job).
    const std::vector<part_record_t*> lines = sprio_lines(*job, req, now);
    if (lines.empty()) return true;
    if ((slurm_conf.private_data & PRIVATE_DATA_JOBS) && job->user_id != uid &&
        !validate_operator(uid)) {
      return true;  // PrivateData=jobs: only the owner and operators see a job's factors
    }
    for (part_record_t* part : lines) {
      auto* obj =
          static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
      slurm_copy_priority_factors_object(obj, job->prio_factors);
      xfree(obj->partition);
      obj->partition = xstrdup(part->name);
      if (job->part_ptr_list != nullptr) {
        obj->priority_part = part->norm_priority * static_cast<double>(weight_partition);
      }
      obj->job_id = job->job_id;
      obj->user_id = job->user_id;
      list_append(out.get(), obj);
    }
    return true;
  });
  return list_count(out.get()) == 0 ? nullptr : out.release();
}

}  // namespace sp
