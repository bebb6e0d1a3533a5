#include "usage.hpp"

#include "refund.hpp"
#include "story_slot.hpp"
#include "usage_accounting.hpp"

#include <algorithm>
#include <cstdio>
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

void UsageTracker::accrue(job_record_t& job, int64_t from, int64_t to, bool tree) {
  if (to <= from || job.assoc_ptr == nullptr) return;
  const long double u = billable_usage(job, from, to);
  const auto secs = static_cast<double>(to - from);
  const int n_tres = tres_count();
  if (tree) {
    auto it = index_.find(job.assoc_ptr);
    if (it != index_.end()) add_usage(nodes_, it->second, u, issues_);
  } else {  // between passes: straight into the association chain
    for (auto* a = job.assoc_ptr; a && a->usage; a = a->usage->parent_assoc_ptr) {
      a->usage->usage_raw = std::min(a->usage->usage_raw + u, kMaxUsageRaw);
    }
  }
  for (auto* a = job.assoc_ptr; a && a->usage; a = a->usage->parent_assoc_ptr) {
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

void collect_jobs(std::vector<uint32_t>& pending, std::vector<job_record_t*>& running) {
  pending.clear();
  running.clear();
  if (&job_list == nullptr || job_list == nullptr) return;
  struct Out {
    std::vector<uint32_t>& pending;
    std::vector<job_record_t*>& running;
  } out{pending, running};
  pending.reserve(static_cast<std::size_t>(list_count(job_list)));
  // list_for_each_ro: one lock of the list for the walk (list_next takes its write lock for
  // every job).
  (void)list_for_each_ro(
      job_list,
      [](void* x, void* arg) {
        auto* job = static_cast<job_record_t*>(x);
        auto& o = *static_cast<Out*>(arg);
        if (IS_JOB_PENDING(job)) {
          if (job->priority != 0 && !job->direct_set_prio) o.pending.push_back(job->job_id);
        } else if (IS_JOB_RUNNING(job) && job->start_time != 0) {
          o.running.push_back(job);
        }
        return 0;
      },
      &out);
}

void UsageTracker::update(int64_t now, const Weights& w, double dampening,
                          const std::vector<job_record_t*>& running) {
  const int64_t last = last_decay_.load();
  if (now < last) {
    backwards_.error(log_, "the clock went back " + std::to_string(last - now) +
                               " s: no decay and no new usage for that pass (logged once)");
    last_decay_ = now;
    return;
  }
  if (assoc_mgr_assoc_list == nullptr || &job_list == nullptr || job_list == nullptr) return;
  const double m = decay_multiplier(now - last, w.half_life_s);
  const int n_tres = tres_count();

  // The tree, decayed.
  nodes_.clear();
  recs_.clear();
  index_.clear();
  ListIterator it = list_iterator_create(assoc_mgr_assoc_list);
  while (auto* a = static_cast<slurmdb_assoc_rec_t*>(list_next(it))) {
    if (a->usage == nullptr) continue;
    FsNode n;
    n.id = a->id;
    n.shares_raw = a->shares_raw;
    n.user = a->user != nullptr;
    n.usage_raw = a->usage->usage_raw * m;
    index_.emplace(a, static_cast<int32_t>(nodes_.size()));
    nodes_.push_back(n);
    recs_.push_back(a);
    decay_usage_record(a->usage, m, n_tres);
    if (a->leaf_usage && a->leaf_usage != a->usage) {
      a->leaf_usage->usage_raw *= m;
      decay_usage_record(a->leaf_usage, m, n_tres);
    }
  }
  list_iterator_destroy(it);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const auto* p = recs_[i]->usage->parent_assoc_ptr;
    auto pi = p ? index_.find(p) : index_.end();
    nodes_[i].parent = pi != index_.end() ? pi->second : -1;
  }
  if (assoc_mgr_qos_list) {
    ListIterator qit = list_iterator_create(assoc_mgr_qos_list);
    while (auto* q = static_cast<slurmdb_qos_rec_t*>(list_next(qit))) {
      if (q->usage == nullptr || (q->flags & QOS_FLAG_NO_DECAY)) continue;
      q->usage->usage_raw *= m;
      q->usage->grp_used_wall *= m;
      if (q->usage->usage_tres_raw) {
        for (int i = 0; i < n_tres; ++i) q->usage->usage_tres_raw[i] *= m;
      }
    }
    list_iterator_destroy(qit);
  }

  if (!run_secs_synced_) {
    resync_run_secs();
    run_secs_synced_ = true;
  }
  // New usage of running jobs since the last pass (ended jobs were counted by job_ended()).
  for (job_record_t* job : running) {
    const int64_t from = std::max<int64_t>(job->start_time, last);
    accrue(*job, from, now, true);
    if (job->end_time_exp != static_cast<time_t>(NO_VAL)) {
      release_tres_run_secs(*job, run_secs_to_release(run_secs_job(*job), from, now, false));
    }
  }

  compute_fairshare(nodes_, issues_, dampening);
  write_back();
  log_issues();
  last_decay_ = now;
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
                             StoryField field, bool lost_at_once) {
  if (job.end_time_exp == static_cast<time_t>(NO_VAL)) return;  // this run's end is counted
  job.end_time_exp = static_cast<time_t>(NO_VAL);  // Slurm resets it when the job starts again
  if (job.start_time == 0) return;
  int64_t end = now;
  if (job.end_time >= job.start_time && job.end_time < end) end = job.end_time;
  const int64_t from = std::max<int64_t>(job.start_time, last_decay_.load());
  accrue(job, from, end, false);
  release_tres_run_secs(job, run_secs_to_release(run_secs_job(job), from, end, true));
  refund_lost_run(job, end, now, lost_work_charge, field, lost_at_once);
}

void UsageTracker::refund_lost_run(job_record_t& job, int64_t end, int64_t now,
                                   double lost_work_charge, StoryField field, bool lost_at_once) {
  const char* story = story_text(job, field);
  if ((story == nullptr && !lost_at_once) || job.assoc_ptr == nullptr) return;
  const double part =
      refund_fraction(story ? story : "", job.start_time, lost_work_charge, lost_at_once);
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
  ListIterator it = list_iterator_create(job_list);
  while (auto* job = static_cast<job_record_t*>(list_next(it))) {
    if (!IS_JOB_RUNNING(job) || job->start_time == 0 || job->start_time >= last ||
        job->end_time_exp == static_cast<time_t>(NO_VAL)) {
      continue;
    }
    release_tres_run_secs(*job,
                          run_secs_to_release(run_secs_job(*job), job->start_time, last, false));
  }
  list_iterator_destroy(it);
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
