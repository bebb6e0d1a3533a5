#include "preflight_cmd.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "preflight.hpp"
#include "run.hpp"

namespace sp::tool {
namespace {

// The words a command prints into *out; false when it fails (why, in one line, in *why).
bool words(const std::vector<std::string>& argv, std::vector<std::string>* out, std::string* why) {
  const RunResult r = run(argv);
  if (r.status != 0) {
    *why = argv[0] + " failed: " + first_line(r.err + r.out);
    return false;
  }
  *out = split_words(r.out);
  return true;
}

void print_rules(const Policy& p) {
  for (const auto& q : p.qos) {
    std::string role = "preemptible";
    if (!q.preemptible) {
      role = "preempts [";
      for (std::size_t i = 0; i < q.preempts.size(); ++i) role += (i ? "," : "") + q.preempts[i];
      role += "]";
    }
    std::printf("qos %s: %s\n", q.name.c_str(), role.c_str());
  }
  std::printf("%s: valid\n", p.source.c_str());
}

}  // namespace

int check_command(const Policy& p, bool policy_only) {
  print_rules(p);
  if (policy_only) return 0;
  std::fflush(stdout);

  const RunResult conf = run({"scontrol", "show", "config"});
  if (conf.status != 0) {
    std::fprintf(stderr,
                 "preemptctl: slurmctld does not answer (scontrol show config: %s): start it, or "
                 "set SLURM_CONF to the cluster's slurm.conf; --policy-only checks the file "
                 "alone\n",
                 first_line(conf.err + conf.out).c_str());
    return 1;
  }
  ClusterFacts facts;
  facts.config = parse_show_config(conf.out);
  std::string why;
  if (!words({"sinfo", "-a", "-h", "-o", "%R"}, &facts.partitions, &why) ||
      !words({"sinfo", "-a", "-h", "-N", "-o", "%N"}, &facts.nodes, &why)) {
    std::fprintf(stderr, "preemptctl: cannot list the cluster's partitions and nodes: %s\n",
                 why.c_str());
    return 1;
  }
  // slurmdbd may be down while slurmctld runs: its checks are then skipped, and said so.
  std::vector<std::string> skipped;
  facts.has_accounts =
      words({"sacctmgr", "-nP", "show", "account", "format=account"}, &facts.accounts, &why);
  if (!facts.has_accounts) skipped.push_back(why);
  facts.has_qos = words({"sacctmgr", "-nP", "show", "qos", "format=name"}, &facts.qos, &why);
  if (!facts.has_qos && skipped.empty()) skipped.push_back(why);

  const auto problems = preflight_problems(p, facts);
  for (const auto& line : problems) std::printf("%s\n", line.c_str());
  for (const auto& s : skipped) {
    std::printf("slurmdbd: accounts and QOS not checked (%s): start slurmdbd and check again\n",
                s.c_str());
  }
  const auto it = facts.config.find("ClusterName");
  const std::string cluster = it == facts.config.end() ? "?" : it->second;
  const std::size_t n = problems.size() + skipped.size();
  if (n == 0) {
    std::printf("preemptctl: cluster %s is ready for %s\n", cluster.c_str(), p.source.c_str());
    return 0;
  }
  std::printf("preemptctl: %zu problem%s in cluster %s for %s\n", n, n == 1 ? "" : "s",
              cluster.c_str(), p.source.c_str());
  return 1;
}

}  // namespace sp::tool
