// The slurm-preempt policy: what the site wrote in preempt.yaml, validated and immutable.
//
// Every default of the suite lives in this header, as a default member initializer or in
// default_qos() / default_classes(). The loader (policy_loader.hpp) only overrides them.
// lib/ never includes a Slurm header: plugins translate Slurm structures into the plain views
// of job_view.hpp and call the functions of decide.hpp / priority.hpp with a Policy.
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "story_field.hpp"

namespace sp {

// Per-user limits attached to a QOS. Unset means "no limit from this policy".
struct Limits {
  std::optional<int64_t> max_walltime_s;
  std::optional<int64_t> max_running_jobs_per_user;
  std::optional<int64_t> max_cpus_per_user;
  std::optional<int64_t> max_gpus_per_user;
  bool operator==(const Limits&) const = default;
};

// What happens to a preempted job of this QOS.
enum class RequeueMode {
  User,     // the job's own --requeue / --no-requeue decides (Slurm's default: no requeue)
  Default,  // requeue unless the user said --no-requeue
  Always,   // requeue, and a --no-requeue submission is rejected with a reason
  Never,    // cancel, and a --requeue submission is rejected with a reason
};

struct QosRule {
  std::string name;
  bool preemptible = false;           // preemptee: may be preempted
  std::vector<std::string> preempts;  // preemptor: QOS this one may preempt
  uint32_t boost = 0;                 // priority added to jobs of this QOS
  int64_t grace_s = -1;               // -1: checkpoint.grace_s
  int64_t min_runtime_s = 0;          // not chosen as a victim before this much runtime
  RequeueMode requeue = RequeueMode::User;
  Limits limits;
  bool operator==(const QosRule&) const = default;
};

// An owner group: a Slurm account whose members own some nodes, reached through partitions.
struct OwnerGroup {
  std::string account;
  std::vector<std::string> partitions;
  std::string nodes;                    // hostlist expression, for example "n[3-4]"
  std::string qos = "owner";            // preemptor QOS given to the group's jobs
  std::vector<std::string> node_names;  // nodes, expanded
  std::string partition_list;           // partitions joined with ',' (set by finalize())
  bool operator==(const OwnerGroup&) const = default;
};

// Which steps of a job get the checkpoint signal (always only the processes that handle it):
// every step (the default), or only the batch shell and the steps that hold GPUs.
enum class SignalSteps { Gpu, All };

struct CheckpointPolicy {
  int signal = SIGUSR1;  // the user-visible checkpoint signal
  int64_t grace_s = 60;  // default grace between the signal and the kill
  SignalSteps steps = SignalSteps::All;
  std::string dir_env = "SLURM_CHECKPOINT_DIR";
  std::string notice_file = "preempt-notice";  // written in the checkpoint directory
  bool operator==(const CheckpointPolicy&) const = default;
};

// Run:AI-style priority classes: inference and build are never preempted. A class is a Slurm
// QOS of the same name (preemptctl qos-sync creates it), so squeue and sacct show it.
struct PriorityClass {
  std::string name;
  uint32_t priority = 0;
  bool preemptible = true;
  int64_t grace_s = -1;       // what a victim of this class gets; -1: checkpoint.grace_s
  int64_t min_runtime_s = 0;  // younger victims are taken last (after every older one)
  bool operator==(const PriorityClass&) const = default;
};

// A project (a Slurm account)'s guaranteed GPUs. Above its quota a project borrows idle GPUs
// with preemptible classes; a project under its quota reclaims them. Non-preemptible classes
// run only within the quota.
struct Quota {
  std::string account;
  int64_t gpus = 0;
  int64_t limit = -1;                   // hard cap on the project's GPUs, borrowing included
  std::vector<std::string> partitions;  // counted in these partitions only; empty: everywhere
  uint32_t over_quota_weight = 1;       // share of idle GPUs when projects compete for them
  int64_t cpus = -1;                    // -1: no CPU quota
  // Slurm license that holds the quota for non-preemptible classes ("quota_<account>", lower
  // case; set by finalize()). Requested as "<license>@slurm-preempt:<gpus>".
  std::string license;
  bool counts_partition(std::string_view partition) const;
  bool operator==(const Quota&) const = default;
};

// The class a job of a project gets when it names no QOS.
struct DefaultClasses {
  std::string batch = "train";
  std::string interactive = "interactive";  // salloc and srun allocations
  bool operator==(const DefaultClasses&) const = default;
};

// Server part of the quota licenses' names (sacctmgr add resource server=...).
inline constexpr std::string_view kLicenseServer = "slurm-preempt";

struct PriorityWeights {
  // Used where slurm.conf has no matching PriorityWeight* key (or leaves PriorityMaxAge unset);
  // slurm.conf wins where it has one, PriorityWeightX=0 included, which turns that factor off
  // as with priority/multifactor (effective_weights() in priority.hpp).
  uint32_t age = 1000;
  uint32_t fairshare = 10000;
  uint32_t qos = 1000;
  uint32_t partition = 1000;
  uint32_t job_size = 0;
  uint32_t priority_class = 1000;
  // The over-quota share (fair division of idle GPUs by over_quota_weight); applies only to a
  // policy with quotas. As large as fairshare's by default, so that usage history does not
  // undo the division.
  uint32_t over_quota = 10000;
  int64_t half_life_s = int64_t{7} * 24 * 3600;
  int64_t max_age_s = int64_t{7} * 24 * 3600;
  // Used where slurm.conf leaves PriorityCalcPeriod at Slurm's default (5 minutes); unlike
  // slurm.conf (whole minutes), the policy may give seconds.
  int64_t calc_period_s = 300;
  // What a run killed at its grace end after a preemption (no checkpoint: its work is lost)
  // costs in fair-share usage, as a fraction of what it ran: 0 refunds it all, 1 charges it
  // all (fairshare_refund.hpp).
  double lost_work_charge = 0.0;
  bool operator==(const PriorityWeights&) const = default;
};

// Anti-starvation (off while max_preemptions is 0): a job preempted max_preemptions times
// within `window` is taken as a victim last, after every other candidate, for protect_for after
// that preemption. Owners and quota reclaim still get their resources: from other jobs first.
struct StarvationPolicy {
  uint32_t max_preemptions = 0;
  int64_t window_s = int64_t{24} * 3600;
  int64_t protect_for_s = int64_t{2} * 3600;
  bool enabled() const { return max_preemptions > 0; }
  bool operator==(const StarvationPolicy&) const = default;
};
inline constexpr uint32_t kMaxStarvationPreemptions = 1000;
inline constexpr int64_t kMaxStarvationWindowS = int64_t{30} * 24 * 3600;

// Where the plugins keep a job's story (story_field.hpp): appended to the field, never
// replacing what others wrote there (jobstats' JSON in AdminComment, a user's --comment).
struct StoryPolicy {
  StoryField field = StoryField::AdminComment;
  bool operator==(const StoryPolicy&) const = default;
};

struct Policy {
  std::string source = "<defaults>";  // file the policy came from, for messages
  std::vector<QosRule> qos;           // default_qos() unless the file has a qos: section
  std::vector<std::string> public_partitions = {"public"};
  std::string standby_partition = "standby";  // spans public and owned nodes
  // Where a preemptible job without --partition goes: the public partitions, then the
  // standby partition, joined with ',' (set by finalize(); Slurm tries them in that order
  // when the public partitions have the higher PriorityTier).
  std::string spill_partitions;
  std::vector<OwnerGroup> owners;
  CheckpointPolicy checkpoint;
  std::vector<PriorityClass> classes;  // default_classes() unless the file has classes:
  // Each preemptible class as the QOS rule its jobs are preempted under (grace, min_runtime),
  // so the checkpoint promise treats a train job like a standby job (set by finalize()).
  std::vector<QosRule> class_rules;
  std::vector<Quota> quotas;
  // Lower-cased account -> index in quotas, sorted (set by finalize()): quota_index runs for
  // every job preempt/quota and priority/fairshare see, with a thousand projects.
  std::vector<std::pair<std::string, int>> quota_lookup;
  DefaultClasses default_class;
  PriorityWeights priority;
  StarvationPolicy starvation;
  StoryPolicy story;

  // Found the way Slurm finds them: QOS and account names without regard to case.
  const QosRule* find_qos(std::string_view name) const;
  const OwnerGroup* find_owner(std::string_view account) const;
  const PriorityClass* find_class(std::string_view name) const;
  const QosRule* find_class_rule(std::string_view name) const;
  const Quota* find_quota(std::string_view account) const;
  // Index in classes / quotas, -1 when absent.
  int class_index(std::string_view name) const;
  int quota_index(std::string_view account) const;
  // The preemptible QOS, for hints in refusals: "--qos=standby" or "--qos=standby or
  // --qos=scavenger"; empty when the policy has none.
  std::string preemptible_qos_hint() const;
  // Grace for a QOS: its own, or the checkpoint default.
  int64_t grace_for(const QosRule& q) const {
    return q.grace_s >= 0 ? q.grace_s : checkpoint.grace_s;
  }
  int64_t grace_for(const PriorityClass& c) const {
    return c.grace_s >= 0 ? c.grace_s : checkpoint.grace_s;
  }
  bool operator==(const Policy&) const = default;
};

// Ranges checked by the loader; named so messages and docs agree.
inline constexpr uint32_t kMaxBoost = 1'000'000;
inline constexpr int64_t kMaxGraceS = int64_t{24} * 3600;
inline constexpr uint32_t kMaxWeight = 1'000'000'000;

// Computes the derived strings above; the loader and default_policy() call it.
void finalize(Policy& p);

std::vector<QosRule> default_qos();
std::vector<PriorityClass> default_classes();
Policy default_policy();

}  // namespace sp
