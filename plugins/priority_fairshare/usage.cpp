#include "usage.hpp"

#include "refund.hpp"
#include "slurm_list.hpp"
#include "story_slot.hpp"
#include "usage_accounting.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <fstream>
#include <sstream>

extern "C" {
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
}

// slurmctld's; weak so that sshare and sprio, which load this plugin too, can.
extern "C" int slurmctld_tres_cnt __attribute__((weak));
extern "C" List job_list __attribute__((weak));

namespace sp {
namespace {

// Billable TRES-seconds of a job over [from, to], times its QOS' UsageFactor.
long double billable_usage(job_record_t& job, int64_t from, int64_t to) {
  const double billable = calc_job_billable_tres(&job, static_cast<time_t>(from), true);
  long double u = static_cast<long double>(to - from) * billable;
  if (job.qos_ptr && job.qos_ptr->usage_factor >= 0) u *= job.qos_ptr->usage_factor;
  return u;
}

int tres_count() { return &slurmctld_tres_cnt != nullptr ? slurmctld_tres_cnt : 0; }

void decay_usage_record(slurmdb_assoc_usage_t* u, double m, int n_tres) {
  if (u == nullptr) return;
  if (u->usage_tres_raw) {
    for (int i = 0; i < n_tres; ++i) u->usage_tres_raw[i] *= m;
  }
  u->grp_used_wall *= m;
}

}  // namespace

std::string state_file_path() {
  const char* dir = slurm_conf.state_save_location ? slurm_conf.state_save_location : ".";
  return std::string(dir) + "/priority_fairshare_state";
}

UsageTracker::UsageTracker(LogSink& log, int64_t now) : log_(log), last_decay_(now) {
  const std::string path = state_file_path();
  std::ifstream in(path);
  if (!in) {
    log_.log_info("no usage state at " + path + ": usage decays and accrues from now");
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (auto t = parse_state(text.str())) {
    last_decay_ = *t;
    log_.log_info("usage last decayed at " + std::to_string(*t) + " (" + std::to_string(now - *t) +
                  " s ago)");
  } else {
    log_.log_error("cannot read " + path + ": usage decays and accrues from now");
  }
}

void UsageTracker::save() const {
  const std::string path = state_file_path();
  const std::string tmp = path + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << format_state(last_decay_.load());
    out.flush();
    if (!out) {
      state_error_.error(log_, "cannot write " + tmp + ": a restart may decay usage twice");
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    state_error_.error(log_, "cannot rename " + tmp + " to " + path);
  }
}

void UsageTracker::accrue_ended(job_record_t& job, int64_t from, int64_t to) {
  if (to <= from || job.assoc_ptr == nullptr) return;
  const long double u = billable_usage(job, from, to);
  const auto secs = static_cast<double>(to - from);
  const int n_tres = tres_count();
  for (auto* a = job.assoc_ptr; a && a->usage; a = a->usage->parent_assoc_ptr) {
    a->usage->usage_raw = std::min(a->usage->usage_raw + u, kMaxUsageRaw);
    a->usage->grp_used_wall += secs;
    if (a->usage->usage_tres_raw && job.tres_alloc_cnt) {
      for (int i = 0; i < n_tres; ++i) {
        if (job.tres_alloc_cnt[i] != NO_CONSUME_VAL64) {
          a->usage->usage_tres_raw[i] += secs * static_cast<long double>(job.tres_alloc_cnt[i]);
        }
      }
    }
  }
  if (job.qos_ptr && job.qos_ptr->usage) {
    job.qos_ptr->usage->usage_raw = std::min(job.qos_ptr->usage->usage_raw + u, kMaxUsageRaw);
    job.qos_ptr->usage->grp_used_wall += secs;
  }
}

void UsageTracker::accrue_running(job_record_t& job, int64_t from, int64_t to) {
  if (to <= from || job.assoc_ptr == nullptr) return;
  const int32_t leaf = index_of(job.assoc_ptr);
  if (leaf < 0) return;  // not in assoc_mgr's list: nothing of it is written
  const long double u = billable_usage(job, from, to);
  const auto secs = static_cast<double>(to - from);
  add_usage(nodes_, leaf, u, issues_);
  const auto n_tres = static_cast<std::size_t>(prep_.n_tres);
  // The chain as add_usage walks it: bounded, so a cyclic parent chain ends.
  int32_t k = leaf;
  for (std::size_t steps = 0; k >= 0 && steps <= nodes_.size(); ++steps) {
    const auto ku = static_cast<std::size_t>(k);
    acc_wall_[ku] += secs;
    if (job.tres_alloc_cnt) {
      double* acc = acc_tres_.data() + ku * n_tres;
      for (std::size_t i = 0; i < n_tres; ++i) {
        if (job.tres_alloc_cnt[i] != NO_CONSUME_VAL64) {
          acc[i] += secs * static_cast<double>(job.tres_alloc_cnt[i]);
        }
      }
    }
    if (nodes_[ku].parent == k) break;
    k = nodes_[ku].parent;
  }
  if (job.qos_ptr && job.qos_ptr->usage) {
    auto q = std::find_if(qos_use_.begin(), qos_use_.end(),
                          [&](const QosUse& x) { return x.qos == job.qos_ptr; });
    if (q == qos_use_.end()) q = qos_use_.insert(q, QosUse{job.qos_ptr, 0, 0});
    q->usage += u;
    q->secs += secs;
  }
}

int32_t UsageTracker::index_of(const void* assoc) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), assoc, [](const auto& e, const void* p) {
    return std::less<const void*>()(e.first, p);
  });
  return it != index_.end() && it->first == assoc ? it->second : -1;
}

void collect_jobs(std::vector<uint32_t>& pending, std::vector<job_record_t*>& running) {
  pending.clear();
  running.clear();
  if (&job_list == nullptr || job_list == nullptr) return;
  pending.reserve(static_cast<std::size_t>(list_count(job_list)));
  for_each_ro<job_record_t>(job_list, [&](job_record_t* job) {
    if (IS_JOB_PENDING(job)) {
      if (job->priority != 0 && !job->direct_set_prio) pending.push_back(job->job_id);
    } else if (IS_JOB_RUNNING(job) && job->start_time != 0) {
      running.push_back(job);
    }
    return true;
  });
}

void UsageTracker::prepare(int64_t now, const Weights& w, double dampening,
                           const std::vector<job_record_t*>& running) {
  prep_ = Prepared{};
  issues_ = FsIssues{};
  const int64_t last = last_decay_.load();
  if (now < last) {
    prep_.ready = true;
    prep_.clock_back = true;
    prep_.now = now;
    return;
  }
  if (assoc_mgr_assoc_list == nullptr || &job_list == nullptr || job_list == nullptr) return;
  prep_.now = now;
  prep_.weights = w;
  prep_.dampening = dampening;
  prep_.running = &running;
  prep_.m = decay_multiplier(now - last, w.half_life_s);
  prep_.n_tres = tres_count();

  // The tree, decayed (in nodes_ only: apply() writes).
  nodes_.clear();
  recs_.clear();
  index_.clear();
  seen_raw_.clear();
  seen_parent_.clear();
  const long double m = prep_.m;
  for_each_ro<slurmdb_assoc_rec_t>(assoc_mgr_assoc_list, [&](slurmdb_assoc_rec_t* a) {
    if (a->usage == nullptr) return true;
    FsNode n;
    n.id = a->id;
    n.shares_raw = a->shares_raw;
    n.user = a->user != nullptr;
    n.usage_raw = a->usage->usage_raw * m;
    index_.emplace_back(a, static_cast<int32_t>(nodes_.size()));
    nodes_.push_back(n);
    recs_.push_back(a);
    seen_raw_.push_back(a->usage->usage_raw);
    seen_parent_.push_back(a->usage->parent_assoc_ptr);
    return true;
  });
  std::sort(index_.begin(), index_.end(), [](const auto& x, const auto& y) {
    return std::less<const void*>()(x.first, y.first);
  });
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].parent = seen_parent_[i] ? index_of(seen_parent_[i]) : -1;
  }

  // New usage of running jobs since the last pass (ended jobs were counted by job_ended()).
  acc_wall_.assign(nodes_.size(), 0.0);
  acc_tres_.assign(nodes_.size() * static_cast<size_t>(std::max(prep_.n_tres, 0)), 0.0);
  qos_use_.clear();
  releases_.clear();
  for (job_record_t* job : running) {
    const int64_t from = std::max<int64_t>(job->start_time, last);
    accrue_running(*job, from, now);
    if (job->end_time_exp != static_cast<time_t>(NO_VAL)) {
      const uint64_t secs = run_secs_to_release(run_secs_job(*job), from, now, false);
      if (secs > 0) releases_.push_back(Release{job, secs});
    }
  }
  compute_fairshare(nodes_, issues_, dampening);
  prep_.ready = true;
}

bool UsageTracker::unchanged() const {
  if (assoc_mgr_assoc_list == nullptr || tres_count() != prep_.n_tres) return false;
  size_t i = 0;
  bool same = true;
  for_each_ro<slurmdb_assoc_rec_t>(assoc_mgr_assoc_list, [&](slurmdb_assoc_rec_t* a) {
    if (a->usage == nullptr) return true;
    const size_t k = i++;
    same = k < recs_.size() && recs_[k] == a && a->usage->usage_raw == seen_raw_[k] &&
           a->usage->parent_assoc_ptr == seen_parent_[k] && a->shares_raw == nodes_[k].shares_raw;
    return same;  // the first difference stops the walk
  });
  return same && i == recs_.size();
}

void UsageTracker::apply() {
  if (!prep_.ready) return;
  prep_.ready = false;
  if (prep_.clock_back) {
    backwards_.error(log_, "the clock went back " + std::to_string(last_decay_.load() - prep_.now) +
                               " s: no decay and no new usage for that pass (logged once)");
    last_decay_ = prep_.now;
    return;
  }
  if (!unchanged()) {  // an administrator's change since prepare(): the pass again, in this hold
    const Prepared p = prep_;
    prepare(p.now, p.weights, p.dampening, *p.running);
    if (!prep_.ready || prep_.clock_back) return;
    prep_.ready = false;
    log_.log_info(
        "associations changed between the usage pass' read and its write (an administrator's "
        "sacctmgr): the pass computed again under assoc_mgr's write locks");
  }
  const long double m = prep_.m;
  const auto n_tres = static_cast<size_t>(prep_.n_tres);
  for (size_t k = 0; k < recs_.size(); ++k) {
    slurmdb_assoc_rec_t* a = recs_[k];
    slurmdb_assoc_usage_t* u = a->usage;
    if (u->usage_tres_raw) {
      const double* acc = acc_tres_.data() + k * n_tres;
      for (size_t i = 0; i < n_tres; ++i) u->usage_tres_raw[i] = u->usage_tres_raw[i] * m + acc[i];
    }
    u->grp_used_wall = u->grp_used_wall * static_cast<double>(m) + acc_wall_[k];
    if (a->leaf_usage && a->leaf_usage != u) {
      a->leaf_usage->usage_raw *= m;
      decay_usage_record(a->leaf_usage, static_cast<double>(m), prep_.n_tres);
    }
  }
  if (assoc_mgr_qos_list) {
    const int n = prep_.n_tres;
    for_each_ro<slurmdb_qos_rec_t>(assoc_mgr_qos_list, [&](slurmdb_qos_rec_t* q) {
      if (q->usage == nullptr) return true;
      if (!(q->flags & QOS_FLAG_NO_DECAY)) {
        q->usage->usage_raw *= m;
        q->usage->grp_used_wall *= static_cast<double>(m);
        if (q->usage->usage_tres_raw) {
          for (int i = 0; i < n; ++i) q->usage->usage_tres_raw[i] *= m;
        }
      }
      // Only QOS still in the list get their jobs' usage: never a pointer it lost.
      for (const QosUse& use : qos_use_) {
        if (use.qos != q) continue;
        q->usage->usage_raw = std::min(q->usage->usage_raw + use.usage, kMaxUsageRaw);
        q->usage->grp_used_wall += use.secs;
      }
      return true;
    });
  }
  if (!run_secs_synced_) {
    resync_run_secs();
    run_secs_synced_ = true;
  }
  for (const Release& r : releases_) release_tres_run_secs(*r.job, r.secs);
  write_back();
  log_issues();
  last_decay_ = prep_.now;
}

void UsageTracker::write_back() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const FsNode& n = nodes_[i];
    slurmdb_assoc_usage_t* u = recs_[i]->usage;
    u->usage_raw = n.usage_raw;
    u->usage_norm = n.usage_norm;
    u->usage_efctv = n.usage_efctv;
    u->shares_norm = n.shares_norm;
    u->level_shares = n.level_shares;
    u->fs_factor = n.fs_factor;
  }
}

void UsageTracker::log_issues() {
  auto name = [&](uint32_t id) {
    for (auto* a : recs_) {
      if (a->id == id) {
        return std::string(a->acct ? a->acct : "?") + (a->user ? std::string("/") + a->user : "") +
               " (id " + std::to_string(id) + ")";
      }
    }
    return "id " + std::to_string(id);
  };
  if (!issues_.zero_shares.empty()) {
    zero_shares_.error(log_, "association " + name(issues_.zero_shares.front()) + " and " +
                                 std::to_string(issues_.zero_shares.size() - 1) +
                                 " other(s) have no shares: their jobs get fair-share factor 0 "
                                 "(logged once)");
  }
  if (!issues_.bad_parent.empty()) {
    bad_parent_.error(log_, "association " + name(issues_.bad_parent.front()) +
                                " has no valid parent: treated as a root (logged once)");
  }
  if (issues_.usage_clamped) {
    clamped_.error(log_, "usage was negative, not a number or above 1e18: clamped (logged once)");
  }
  issues_ = FsIssues{};
}

void UsageTracker::job_ended(job_record_t& job, int64_t now, double lost_work_charge,
                             StoryField field, bool killed) {
  if (job.end_time_exp == static_cast<time_t>(NO_VAL)) return;  // this run's end is counted
  job.end_time_exp = static_cast<time_t>(NO_VAL);  // Slurm resets it when the job starts again
  if (job.start_time == 0) return;
  int64_t end = now;
  if (job.end_time >= job.start_time && job.end_time < end) end = job.end_time;
  const int64_t from = std::max<int64_t>(job.start_time, last_decay_.load());
  accrue_ended(job, from, end);
  release_tres_run_secs(job, run_secs_to_release(run_secs_job(job), from, end, true));
  refund_lost_run(job, end, now, lost_work_charge, field, killed);
}

void UsageTracker::refund_lost_run(job_record_t& job, int64_t end, int64_t now,
                                   double lost_work_charge, StoryField field, bool killed) {
  const char* story = story_text(job, field);
  if ((story == nullptr && !killed) || job.assoc_ptr == nullptr) return;
  const double part = refund_fraction(story ? story : "", job.start_time, lost_work_charge, killed);
  if (part <= 0) return;
  // What the run accrued, undecayed (the passes during the run decayed the earlier part a
  // little: with a half-life of days, the difference is far below a second's usage); never
  // more than an association or QOS has.
  const long double u = billable_usage(job, job.start_time, end) * static_cast<long double>(part);
  if (!(u > 0)) return;
  for (auto* a = job.assoc_ptr; a && a->usage; a = a->usage->parent_assoc_ptr) {
    a->usage->usage_raw = std::max(a->usage->usage_raw - u, 0.0L);
  }
  if (job.qos_ptr && job.qos_ptr->usage) {
    job.qos_ptr->usage->usage_raw = std::max(job.qos_ptr->usage->usage_raw - u, 0.0L);
  }
  const std::string note = note_refunded(now, static_cast<int64_t>(u + 0.5L), lost_work_charge);
  add_story_note(job, field, note);
  log_.log_info("JobId=" + std::to_string(job.job_id) + " " + note + " (account " +
                (job.account ? job.account : "?") + ", user id " + std::to_string(job.user_id) +
                ")");
}

void UsageTracker::resync_run_secs() {
  if (&job_list == nullptr || job_list == nullptr) return;
  const int64_t last = last_decay_.load();
  for_each_ro<job_record_t>(job_list, [&](job_record_t* job) {
    if (!IS_JOB_RUNNING(job) || job->start_time == 0 || job->start_time >= last ||
        job->end_time_exp == static_cast<time_t>(NO_VAL)) {
      return true;
    }
    release_tres_run_secs(*job,
                          run_secs_to_release(run_secs_job(*job), job->start_time, last, false));
    return true;
  });
}

void set_assoc_usage(slurmdb_assoc_rec_t* assoc, double dampening) {
  if (assoc == nullptr || assoc->usage == nullptr || assoc_mgr_root_assoc == nullptr ||
      assoc_mgr_root_assoc->usage == nullptr) {
    return;
  }
  slurmdb_assoc_usage_t* u = assoc->usage;
  const slurmdb_assoc_rec_t* fs = u->fs_assoc_ptr;
  u->usage_norm = normalized_usage(u->usage_raw, assoc_mgr_root_assoc->usage->usage_raw);
  if (fs == nullptr || fs->usage == nullptr) {
    u->usage_efctv = 1.0L;  // the root
  } else {
    u->usage_efctv = effective_usage(u->usage_norm, fs->usage->usage_efctv, assoc->shares_raw,
                                     u->level_shares, fs == assoc_mgr_root_assoc);
  }
  u->fs_factor = fairshare_factor(u->usage_efctv, u->shares_norm, dampening);
}

}  // namespace sp
