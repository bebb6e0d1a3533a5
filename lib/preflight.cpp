#include "preflight.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace sp {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// The comma-separated items of a slurm.conf value, lower-cased ("Alloc,Contain" -> alloc,
// contain); Slurm's "(null)" is no item.
std::vector<std::string> items(std::string_view value) {
  std::vector<std::string> out;
  if (value == "(null)") return out;
  while (!value.empty()) {
    const auto comma = value.find(',');
    const auto item = trim(value.substr(0, comma));
    if (!item.empty()) out.push_back(lower(item));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

bool has_item(std::string_view value, std::string_view want) {
  const auto all = items(value);
  return std::find(all.begin(), all.end(), want) != all.end();
}

struct Checker {
  const Policy& p;
  const ClusterFacts& c;
  std::vector<std::string> problems;

  std::string value(const std::string& key) const {
    const auto it = c.config.find(key);
    return it == c.config.end() ? std::string("(null)") : it->second;
  }
  void add(std::string line) { problems.push_back(std::move(line)); }
  // "PriorityType is priority/basic; <why>: set PriorityType=priority/fairshare, then <how>"
  void key_problem(const std::string& key, const std::string& why, const std::string& fix,
                   const char* apply) {
    const auto v = value(key);
    add("slurm.conf: " + key + " is " + (v == "(null)" ? std::string("unset") : v) + "; " + why +
        ": set " + fix + ", then " + apply);
  }
};

bool counts_gpus(const Policy& p) {
  if (!p.quotas.empty()) return true;
  return std::any_of(p.qos.begin(), p.qos.end(),
                     [](const QosRule& q) { return q.limits.max_gpus_per_user.has_value(); });
}

bool has_preemptible(const Policy& p) {
  return std::any_of(p.qos.begin(), p.qos.end(), [](const QosRule& q) { return q.preemptible; }) ||
         !p.quotas.empty();
}

void check_config(Checker& k) {
  const Policy& p = k.p;
  constexpr const char* kReconfigure = "scontrol reconfigure";
  constexpr const char* kRestart = "restart slurmctld";
  // JobSubmitPlugins=preempt (Slurm accepts "job_submit/preempt" too).
  {
    const auto all = items(k.value("JobSubmitPlugins"));
    if (std::find(all.begin(), all.end(), "preempt") == all.end() &&
        std::find(all.begin(), all.end(), "job_submit/preempt") == all.end()) {
      k.key_problem("JobSubmitPlugins", "job_submit/preempt applies the policy to submissions",
                    "JobSubmitPlugins=preempt", kReconfigure);
    }
  }
  if (k.value("PriorityType") != "priority/fairshare") {
    k.key_problem("PriorityType",
                  "the policy's boosts, classes and checkpoint environment of interactive jobs "
                  "come from priority/fairshare",
                  "PriorityType=priority/fairshare", kRestart);
  }
  const auto preempt_type = k.value("PreemptType");
  if (!p.quotas.empty() && preempt_type != "preempt/quota") {
    k.key_problem("PreemptType", "the policy's quotas need preempt/quota",
                  "PreemptType=preempt/quota", kReconfigure);
  } else if (has_preemptible(p) && preempt_type != "preempt/quota" &&
             preempt_type != "preempt/qos") {
    k.key_problem("PreemptType", "the policy's preemptible QOS are never preempted",
                  "PreemptType=preempt/quota", kReconfigure);
  }
  const auto mode = k.value("PreemptMode");
  if (has_preemptible(p) && (has_item(mode, "off") || has_item(mode, "suspend"))) {
    k.key_problem("PreemptMode",
                  has_item(mode, "off") ? "preemption is off"
                                        : "a suspended job keeps its GPUs and its grace is lost",
                  "PreemptMode=REQUEUE", kReconfigure);
  }
  if (has_preemptible(p) && !has_item(k.value("SlurmctldParameters"), "preempt_send_user_signal")) {
    k.key_problem("SlurmctldParameters",
                  "without preempt_send_user_signal a preempted job gets SIGTERM, not its "
                  "checkpoint signal",
                  "SlurmctldParameters=preempt_send_user_signal (keep its other items)",
                  kReconfigure);
  }
  if (counts_gpus(p) && !has_item(k.value("AccountingStorageTRES"), "gres/gpu")) {
    k.key_problem("AccountingStorageTRES",
                  "the policy counts GPUs (quotas, max_gpus_per_user) and Slurm does not",
                  "AccountingStorageTRES=gres/gpu", kRestart);
  }
  // Slurm calls priority_p_job_end only with AccountingStorageEnforce's limits (acct_policy.c
  // acct_policy_job_fini); scontrol show config lists "limits" whenever it is on (safe, all).
  if (!has_item(k.value("AccountingStorageEnforce"), "limits")) {
    k.key_problem("AccountingStorageEnforce",
                  "Slurm tells priority/fairshare of a run's end only with limits (a job "
                  "requeued by hand leaves its requeue hold once its nodes are free, each run's "
                  "last stretch counts in fair share, preempted runs are refunded)",
                  "AccountingStorageEnforce=limits (keep its other items)", kRestart);
  }
  if (has_preemptible(p) && !has_item(k.value("PrologFlags"), "contain")) {
    k.key_problem("PrologFlags",
                  "the checkpoint signal's relay needs the extern step on every node",
                  "PrologFlags=contain", "restart slurmctld and every slurmd");
  }
}

void check_names(Checker& k) {
  const Policy& p = k.p;
  const std::set<std::string> partitions(k.c.partitions.begin(), k.c.partitions.end());
  const std::set<std::string> nodes(k.c.nodes.begin(), k.c.nodes.end());
  std::set<std::string> reported;
  // Partition names are matched exactly, as Slurm does.
  auto partition = [&](const std::string& name, const std::string& where) {
    if (partitions.count(name) || !reported.insert("p:" + name).second) return;
    k.add("slurm.conf: partition " + name + " (" + where + " in " + p.source +
          ") does not exist: add PartitionName=" + name + " to slurm.conf or change " + where);
  };
  for (const auto& name : p.public_partitions) partition(name, "partitions.public");
  partition(p.standby_partition, "partitions.standby");
  for (const auto& o : p.owners) {
    for (const auto& name : o.partitions) partition(name, "owners." + o.account + ".partitions");
    for (const auto& n : o.node_names) {
      if (nodes.count(n) || !reported.insert("n:" + n).second) continue;
      k.add("slurm.conf: node " + n + " (owners." + o.account + ".nodes in " + p.source +
            ") does not exist: add it to slurm.conf or change owners." + o.account + ".nodes");
    }
  }
  for (const auto& q : p.quotas) {
    for (const auto& name : q.partitions) partition(name, "quotas." + q.account + ".partitions");
  }

  // Accounts and QOS are matched without regard to case, as Slurm does.
  if (k.c.has_accounts) {
    std::set<std::string> accounts;
    for (const auto& a : k.c.accounts) accounts.insert(lower(a));
    auto account = [&](const std::string& name, const std::string& where) {
      if (accounts.count(lower(name)) || !reported.insert("a:" + lower(name)).second) return;
      k.add("slurmdbd: account " + name + " (" + where + " in " + p.source +
            ") does not exist: sacctmgr add account " + name + " (and its users)");
    };
    for (const auto& o : p.owners) account(o.account, "owners");
    for (const auto& q : p.quotas) account(q.account, "quotas");
  }
  if (k.c.has_qos) {
    std::set<std::string> qos;
    for (const auto& q : k.c.qos) qos.insert(lower(q));
    auto missing = [&](const std::string& name, const std::string& where) {
      if (qos.count(lower(name)) || !reported.insert("q:" + lower(name)).second) return;
      k.add("slurmdbd: qos " + name + " (" + where + " in " + p.source +
            ") does not exist: run preemptctl qos-sync");
    };
    for (const auto& q : p.qos) missing(q.name, "qos");
    for (const auto& o : p.owners) missing(o.qos, "owners." + o.account + ".qos");
    if (!p.quotas.empty()) {  // qos-sync creates the class QOS only for a policy with quotas
      for (const auto& c : p.classes) missing(c.name, "classes");
    }
  }
}

}  // namespace

std::map<std::string, std::string> parse_show_config(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto eq = line.find(" = ");
    if (eq == std::string_view::npos) continue;
    const auto key = trim(line.substr(0, eq));
    if (key.empty() || key.find(' ') != std::string_view::npos) continue;
    out.emplace(std::string(key), std::string(trim(line.substr(eq + 3))));
  }
  return out;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const auto start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

std::vector<std::string> preflight_problems(const Policy& p, const ClusterFacts& c) {
  Checker k{p, c, {}};
  check_config(k);
  check_names(k);
  return std::move(k.problems);
}

}  // namespace sp
