// preemptctl check's preflight: does the running cluster have what the policy needs?
//
// preemptctl reads the facts with scontrol and sacctmgr (text, no Slurm header) and asks
// preflight_problems(), which returns one line per problem, each naming the fix.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy.hpp"

namespace sp {

// What the running cluster has: slurmctld's configuration in force (`scontrol show config`),
// its partitions and nodes, and slurmdbd's accounts and QOS. A list that could not be read
// is absent (has_* false): its checks are skipped, never reported as problems.
struct ClusterFacts {
  std::map<std::string, std::string> config;  // key as Slurm prints it -> value
  std::vector<std::string> partitions;
  std::vector<std::string> nodes;
  std::vector<std::string> accounts;
  std::vector<std::string> qos;
  bool has_accounts = false;
  bool has_qos = false;
};

// `scontrol show config`'s "Key = value" lines (the first section, up to the plugins'
// own "Cgroup Support Configuration:" and the like, which repeat no key we read).
std::map<std::string, std::string> parse_show_config(std::string_view text);

// Whitespace- or newline-separated words (sinfo, sacctmgr -n output), empty ones dropped.
std::vector<std::string> split_words(std::string_view text);

// One line per problem: what is wrong and what to do, in the order slurm.conf keys, then
// partitions and nodes, then accounts, then QOS. Empty: the cluster is ready for the policy.
std::vector<std::string> preflight_problems(const Policy& p, const ClusterFacts& c);

}  // namespace sp
