// Fair-share arithmetic of priority/fairshare: usage decay, normalised shares, effective usage
// and the fair-share factor over an account tree of plain structs. Pure; the plugin copies
// Slurm's association tree in and the results back (plugins/priority_fairshare/usage.cpp).
//
// The algorithm is Slurm's classic fair share (priority/multifactor without Fair Tree or
// DEPTH_OBLIVIOUS), so sshare's columns mean what its documentation says:
//   shares_norm  = product, from the node up to (not including) the root, of
//                  shares_raw / level_shares (level_shares: the sum of the shares of the node
//                  and its siblings; a "parent" node is skipped and its children count as
//                  its parent's);
//   usage_raw    = decayed usage (billable TRES-seconds) of the node and everything below it;
//   usage_norm   = usage_raw / root usage_raw, at most 1 (0 while the cluster has no usage);
//   usage_efctv  = usage_norm under the root, else
//                  usage_norm + (parent usage_efctv - usage_norm) * shares_raw / level_shares;
//   factor       = 2^(-usage_efctv / shares_norm / dampening), 0 when shares_norm is 0.
// Usage is relative to the whole cluster's usage: an account's heavy use fades as it halves
// every half-life while the others keep running.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sp {

// Slurm's SLURMDB_FS_USE_PARENT: "FairShare=parent", the node competes as its parent.
inline constexpr uint32_t kSharesUseParent = 0x7fffffff;
// Raw usage is clamped here (about 3e10 CPU-years): sshare prints it as a uint64_t.
inline constexpr long double kMaxUsageRaw = 1e18L;

struct FsNode {
  // Input.
  uint32_t id = 0;          // association id, for messages
  int32_t parent = -1;      // index of the direct parent in the same vector; -1: a root
  uint32_t shares_raw = 1;  // 0 (or Slurm's NO_VAL) means none; kSharesUseParent
  bool user = false;
  long double usage_raw = 0;  // this node and all below it
  // Output of compute_fairshare().
  int32_t fs_parent = -1;     // first ancestor that is not "parent"
  uint32_t level_shares = 0;  // sum of the shares of this node and its siblings
  double shares_norm = 0;
  long double usage_norm = 0;
  long double usage_efctv = 0;
  double fs_factor = 0;
};

// Things worth one log line, found while computing (the caller logs each kind once).
struct FsIssues {
  std::vector<uint32_t> zero_shares;  // ids of nodes with no shares (factor 0 below them)
  std::vector<uint32_t> bad_parent;   // ids whose parent index was invalid or cyclic
  bool usage_clamped = false;         // NaN, negative or above kMaxUsageRaw was repaired
};

// 2^(-elapsed/half_life): the factor that decays usage over `elapsed_s`. 1 when elapsed is not
// positive (a clock that went backwards decays nothing) or half_life_s <= 0 (no decay).
double decay_multiplier(int64_t elapsed_s, int64_t half_life_s);

// Multiplies every node's usage_raw by m.
void decay_usage(std::vector<FsNode>& nodes, double m);

// Adds usage to node `index` and every ancestor, clamping at kMaxUsageRaw. Returns false (and
// adds nothing) for an out-of-range index or a usage that is NaN, infinite or negative.
bool add_usage(std::vector<FsNode>& nodes, int32_t index, long double usage, FsIssues& issues);

// Computes the outputs of every node. Any order of nodes; a node whose parent index is out of
// range or part of a cycle is treated as a root (and reported). Roots get usage_norm 1 when
// there is usage, usage_efctv 1 and shares_norm 1, as in Slurm.
void compute_fairshare(std::vector<FsNode>& nodes, FsIssues& issues, double dampening = 1.0);

// The per-association steps, shared with priority_p_set_assoc_usage (which Slurm calls for
// one association at a time).
long double normalized_usage(long double usage_raw, long double root_usage_raw);
long double effective_usage(long double usage_norm, long double parent_efctv, uint32_t shares_raw,
                            uint32_t level_shares, bool parent_is_root);

// The plugin's state file (StateSaveLocation/priority_fairshare_state): when usage was last
// decayed, so a restarted slurmctld decays and accrues exactly the time it missed. The usage
// itself is saved by Slurm's association manager (assoc_usage). Text: "version 1\nlast_decay N\n".
std::string format_state(int64_t last_decay);
std::optional<int64_t> parse_state(std::string_view text);  // nullopt: unreadable

}  // namespace sp
