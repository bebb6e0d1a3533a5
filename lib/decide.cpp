#include "decide.hpp"

#include <algorithm>

#include "text.hpp"
#include "units.hpp"

namespace sp {
namespace {

struct OwnedPartition {
  const OwnerGroup* owner = nullptr;
  std::string_view partition;  // the owned entry of the job's partition list
};

// The first entry of the job's partition list that an owner group's partitions include.
OwnedPartition owned_partition(const Policy& p, std::string_view partition) {
  OwnedPartition out;
  out.partition = first_in_list(partition, [&](std::string_view one) {
    for (const auto& g : p.owners) {
      if (std::find(g.partitions.begin(), g.partitions.end(), one) != g.partitions.end()) {
        out.owner = &g;
        return true;
      }
    }
    return false;
  });
  return out;
}

SubmitDecision reject(SubmitDecision::RejectKind kind, std::string reason) {
  SubmitDecision d;
  d.verdict = SubmitDecision::Verdict::Reject;
  d.kind = kind;
  d.reason = std::move(reason);
  return d;
}

// The most generous walltime among preemptible QOS, for the hint in a rejection.
const QosRule* roomiest_preemptible(const Policy& p, int64_t needed_s) {
  const QosRule* best = nullptr;
  for (const auto& q : p.qos) {
    if (!q.preemptible) continue;
    if (q.limits.max_walltime_s && *q.limits.max_walltime_s < needed_s) continue;
    if (best == nullptr || !q.limits.max_walltime_s ||
        (best->limits.max_walltime_s && *q.limits.max_walltime_s > *best->limits.max_walltime_s)) {
      best = &q;
    }
  }
  return best;
}

std::optional<SubmitDecision> check_walltime(const SubmitView& job, const Policy& p,
                                             const QosRule& rule) {
  if (job.time_limit_min == 0 || !rule.limits.max_walltime_s) return std::nullopt;
  const bool unlimited = job.time_limit_min == kTimeUnlimited;
  const int64_t asked = unlimited ? INT64_MAX : int64_t{job.time_limit_min} * 60;
  const int64_t max = *rule.limits.max_walltime_s;
  if (asked <= max) return std::nullopt;
  std::string reason = "time limit " +
                       (unlimited ? std::string("UNLIMITED") : format_duration(asked)) +
                       " exceeds qos " + rule.name + "'s maximum of " + format_duration(max) +
                       "; ask for --time=" + format_duration(max) + " or less";
  if (!rule.preemptible) {
    if (const QosRule* alt = roomiest_preemptible(p, asked)) {
      reason += ", or submit with --qos=" + alt->name + " (preemptible";
      if (alt->limits.max_walltime_s)
        reason += ", up to " + format_duration(*alt->limits.max_walltime_s);
      reason += ")";
    }
  }
  return reject(SubmitDecision::RejectKind::TimeLimit, std::move(reason));
}

// A preemptee's requeue flag is always made explicit: Slurm's JobRequeue default would
// otherwise requeue jobs whose users asked for nothing, and the seed promises cancellation.
std::optional<SubmitDecision> settle_requeue(const SubmitView& job, const QosRule& rule,
                                             SubmitDecision& d) {
  switch (rule.requeue) {
    case RequeueMode::User:
      if (job.requeue == Tristate::Unset) d.set_requeue = false;
      break;
    case RequeueMode::Default:
      if (job.requeue == Tristate::Unset) d.set_requeue = true;
      break;
    case RequeueMode::Always:
      if (job.requeue == Tristate::No) {
        return reject(SubmitDecision::RejectKind::Qos,
                      "qos " + rule.name +
                          " jobs are always requeued when preempted; remove --no-requeue, or "
                          "use another qos");
      }
      if (job.requeue == Tristate::Unset) d.set_requeue = true;
      break;
    case RequeueMode::Never:
      if (job.requeue == Tristate::Yes) {
        return reject(SubmitDecision::RejectKind::Qos,
                      "qos " + rule.name +
                          " jobs are cancelled when preempted and cannot be requeued; remove "
                          "--requeue, or use another qos");
      }
      if (job.requeue == Tristate::Unset) d.set_requeue = false;
      break;
  }
  return std::nullopt;
}

// Refusals that depend only on the partition the user named. `qos_label` names the job's QOS
// ("qos standby", "qos standby (your default)").
std::optional<SubmitDecision> check_named_partition(const SubmitView& job, const Policy& policy,
                                                    const QosRule* rule,
                                                    const std::string& qos_label) {
  const bool preemptible = rule != nullptr && rule->preemptible;
  const std::string hint = policy.preemptible_qos_hint();
  if (const OwnedPartition owned = owned_partition(policy, job.partition); owned.owner) {
    if (preemptible) {
      return reject(
          SubmitDecision::RejectKind::Partition,
          qos_label + " jobs are preemptible and cannot run in partition " +
              std::string(owned.partition) + ", which is reserved for " + owned.owner->account +
              "'s jobs that preempt them; submit with --partition=" + policy.standby_partition +
              " or without --partition");
    }
    if (!job.account.empty() && !same_name(job.account, owned.owner->account)) {
      return reject(SubmitDecision::RejectKind::Partition,
                    "partition " + std::string(owned.partition) + " holds " + owned.owner->account +
                        "'s own nodes" +
                        (hint.empty() ? "; submit without --partition"
                                      : "; other accounts may use them only while idle, as "
                                        "preemptible jobs: submit with " +
                                            hint + " and without --partition"));
    }
  }
  if (!preemptible && !policy.standby_partition.empty() &&
      list_contains(job.partition, policy.standby_partition)) {
    std::string reason = "partition " + policy.standby_partition +
                         " spans owned nodes and takes only preemptible jobs" +
                         (hint.empty() ? std::string() : ": add " + hint);
    if (!policy.public_partitions.empty()) {
      reason += (hint.empty() ? ": use --partition=" : ", or use --partition=") +
                policy.public_partitions.front();
    }
    return reject(SubmitDecision::RejectKind::Partition, std::move(reason));
  }
  return std::nullopt;
}

// The checkpoint promise (checkpoint.hpp), once the QOS and the requeue choice are settled.
std::optional<SubmitDecision> attach_checkpoint(const SubmitView& job, const Policy& policy,
                                                const QosRule* rule, SubmitDecision& d) {
  if (job.interactive && !job.interactive_promise) {
    if (!job.checkpoint_signal.empty() || !job.checkpoint_dir.empty()) {
      return reject(SubmitDecision::RejectKind::Other,
                    "--checkpoint-signal and --checkpoint-dir need PriorityType=priority/fairshare "
                    "for an interactive allocation on this cluster; submit the work with sbatch");
    }
    return std::nullopt;  // stock Slurm's behaviour: its --signal, or TERM at grace start
  }
  CheckpointRequest req;
  req.signal_option = job.checkpoint_signal;
  req.dir_option = job.checkpoint_dir;
  req.user_signal = job.warn_signal;
  req.user_seconds = job.warn_seconds;
  req.requeue = d.set_requeue ? *d.set_requeue : job.requeue == Tristate::Yes;
  std::string error;
  d.checkpoint = resolve_checkpoint(req, policy, rule, &error);
  if (!error.empty()) return reject(SubmitDecision::RejectKind::Other, std::move(error));
  return std::nullopt;
}

// A quota license the user asked for with -L ("quota_<account>@slurm-preempt[:n]"), or an
// empty view. Slurm separates licenses with ',' (and '|' for alternatives).
std::string_view asked_quota_license(std::string_view licenses) {
  constexpr std::string_view kPrefix = "quota_";
  while (!licenses.empty()) {
    const auto sep = licenses.find_first_of(",|");
    const std::string_view item = licenses.substr(0, sep);
    const std::string_view name = item.substr(0, item.find(':'));
    const auto at = name.rfind('@');
    if (name.size() > kPrefix.size() && same_name(name.substr(0, kPrefix.size()), kPrefix) &&
        at != std::string_view::npos && same_name(name.substr(at + 1), kLicenseServer)) {
      return item;
    }
    if (sep == std::string_view::npos) break;
    licenses.remove_prefix(sep + 1);
  }
  return {};
}

// Whether the job's partitions are all ones the quota counts. No partition (the default one)
// counts only for a quota that counts everywhere.
bool quota_counts(const Quota& q, std::string_view partition) {
  if (partition.empty()) return q.partitions.empty();
  return first_in_list(partition, [&](std::string_view one) { return !q.counts_partition(one); })
      .empty();
}

// Project quotas and priority classes; only for a policy with quotas. Gives a project's job
// that names no QOS its default class (updating `qos`), refuses a non-preemptible class outside
// a quota, and asks for the quota license that keeps such a job within its project's quota.
std::optional<SubmitDecision> settle_class(const SubmitView& job, const Policy& policy,
                                           std::string_view& qos, bool& by_default,
                                           SubmitDecision& d) {
  if (const std::string_view asked = asked_quota_license(job.licenses); !asked.empty()) {
    return reject(SubmitDecision::RejectKind::Other,
                  "licenses quota_*@" + std::string(kLicenseServer) +
                      " are set by the scheduler; remove -L " + quote(asked));
  }
  const std::string_view account = job.account.empty() ? job.assoc_account : job.account;
  const Quota* quota = account.empty() ? nullptr : policy.find_quota(account);
  const std::string& fallback =
      job.interactive ? policy.default_class.interactive : policy.default_class.batch;
  if (quota != nullptr && job.qos.empty() && !d.set_qos && !fallback.empty()) {
    d.set_qos = fallback;
    d.default_class = true;
    qos = fallback;
    by_default = false;
  }
  const PriorityClass* cls = policy.find_class(qos);
  if (cls == nullptr || cls->preemptible) return std::nullopt;
  if (quota == nullptr) {
    return reject(SubmitDecision::RejectKind::Qos,
                  "qos " + cls->name + " runs only within a project's GPU quota and account " +
                      (account.empty() ? std::string("(unknown)") : quote(account)) +
                      " has none; use --qos=" + fallback +
                      " (preemptible) or ask your administrator for a quota");
  }
  if (job.gpus > static_cast<uint64_t>(std::max<int64_t>(quota->gpus, 0))) {
    return reject(SubmitDecision::RejectKind::Qos,
                  "job asks for " + std::to_string(job.gpus) + " GPUs with qos " + cls->name +
                      ", above " + quota->account + "'s quota of " + std::to_string(quota->gpus) +
                      " GPUs; non-preemptible classes run only within the quota: " +
                      (quota->gpus > 0 ? "ask for at most " + std::to_string(quota->gpus) + " or "
                                       : std::string()) +
                      "use --qos=" + fallback);
  }
  if (job.gpus > 0 && quota_counts(*quota, job.partition)) {
    // Slurm takes either "a,b" or "a|b" in -L, never both: the quota license joins with ','.
    if (job.licenses.find('|') != std::string_view::npos) {
      return reject(SubmitDecision::RejectKind::Other,
                    "qos " + cls->name + " adds the license " + quota->license + "@" +
                        std::string(kLicenseServer) +
                        " that holds the quota, which Slurm cannot combine with alternative "
                        "licenses (-L a|b): ask for the licenses you need with ','");
    }
    d.add_license = SubmitDecision::License{quota->license, job.gpus};
  }
  return std::nullopt;
}

}  // namespace

SubmitDecision decide(const SubmitView& job, const Policy& policy, int64_t now) {
  (void)now;
  SubmitDecision d;
  // The QOS the job will run with: the user's, or the owner group's for an owner's job that
  // named none. A job without either gets the default QOS Slurm gives it after this plugin
  // (job.default_qos, resolved from the association as Slurm does); "normal", Slurm's last
  // resort, when it is unknown.
  const OwnerGroup* owner = job.account.empty() ? nullptr : policy.find_owner(job.account);
  std::string_view qos = job.qos;
  bool by_default = false;
  if (owner != nullptr && job.partition.empty() && qos.empty()) {
    d.set_qos = owner->qos;
    qos = owner->qos;
  } else if (qos.empty()) {
    qos = job.default_qos.empty() ? std::string_view("normal") : job.default_qos;
    by_default = true;
  }
  if (!policy.quotas.empty()) {
    if (auto r = settle_class(job, policy, qos, by_default, d)) return *r;
  }
  const QosRule* rule = policy.find_qos(qos);

  if (!job.partition.empty()) {
    const std::string label = rule == nullptr
                                  ? std::string()
                                  : "qos " + rule->name + (by_default ? " (your default)" : "");
    if (auto r = check_named_partition(job, policy, rule, label)) return *r;
  }
  if (rule == nullptr) {  // a QOS the policy does not govern: Slurm's rules only
    // A preemptible class (preempt/quota preempts it) gets the promise a preemptible QOS gets.
    if (auto r = attach_checkpoint(job, policy, policy.find_class_rule(qos), d)) return *r;
    return d;
  }

  if (job.qos_allowed == Tristate::No) {
    const std::string user = job.user_name.empty() ? "you" : quote(job.user_name);
    return reject(SubmitDecision::RejectKind::Qos,
                  "user " + user + " (account " + quote(job.assoc_account) + ") may not use qos " +
                      rule->name + "; ask your administrator to grant it (sacctmgr modify user " +
                      user + " set qos+=" + rule->name + ") or submit without --qos=" + rule->name);
  }

  if (rule->preemptible) {
    // Public nodes first, then idle owned nodes through the standby partition.
    if (job.partition.empty() && !policy.spill_partitions.empty()) {
      d.set_partition = policy.spill_partitions;
    }
    if (auto r = settle_requeue(job, *rule, d)) return *r;
  } else if (owner != nullptr && job.partition.empty() && !owner->partition_list.empty()) {
    d.set_partition = owner->partition_list;  // an owner's job goes to its own nodes
  }
  if (auto r = check_walltime(job, policy, *rule)) return *r;
  if (auto r = attach_checkpoint(job, policy, rule, d)) return *r;
  return d;
}

}  // namespace sp
