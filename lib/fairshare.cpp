#include "fairshare.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "priority.hpp"

namespace sp {
namespace {

constexpr uint32_t kSlurmNoVal = 0xfffffffe;  // Slurm's NO_VAL: shares never set

uint64_t shares_of(const FsNode& n) {
  if (n.shares_raw == kSharesUseParent || n.shares_raw >= kSlurmNoVal) return 0;
  return n.shares_raw;
}

long double repaired(long double u, FsIssues& issues) {
  if (!(u >= 0.0L)) {  // NaN or negative
    issues.usage_clamped = true;
    return 0.0L;
  }
  if (u > kMaxUsageRaw) {
    issues.usage_clamped = true;
    return kMaxUsageRaw;
  }
  return u;
}

// Effective parent of every node (-1 for roots), breaking invalid links and cycles.
std::vector<int32_t> checked_parents(const std::vector<FsNode>& nodes, FsIssues& issues) {
  const auto n = static_cast<int32_t>(nodes.size());
  std::vector<int32_t> parent(nodes.size());
  for (int32_t i = 0; i < n; ++i) {
    const int32_t p = nodes[i].parent;
    if (p >= n || p == i || (p < 0 && p != -1)) {
      issues.bad_parent.push_back(nodes[i].id);
      parent[i] = -1;
    } else {
      parent[i] = p;
    }
  }
  // Walk up from each node; a walk that meets a node of its own walk is a cycle: cut it there.
  std::vector<uint8_t> state(nodes.size(), 0);  // 0 new, 1 on the current walk, 2 done
  std::vector<int32_t> walk;
  for (int32_t i = 0; i < n; ++i) {
    int32_t v = i;
    walk.clear();
    while (v >= 0 && state[v] == 0) {
      state[v] = 1;
      walk.push_back(v);
      v = parent[v];
    }
    if (v >= 0 && state[v] == 1) {  // cycle: v's link back into the walk is cut
      issues.bad_parent.push_back(nodes[v].id);
      parent[v] = -1;
    }
    for (int32_t w : walk) state[w] = 2;
  }
  return parent;
}

// Indices ordered so that every parent comes before its children.
std::vector<int32_t> parents_first(const std::vector<int32_t>& parent) {
  const size_t n = parent.size();
  std::vector<int32_t> depth(n, -1);
  int32_t max_depth = 0;
  std::vector<int32_t> chain;
  for (size_t i = 0; i < n; ++i) {
    int32_t v = static_cast<int32_t>(i);
    chain.clear();
    while (v >= 0 && depth[v] < 0) {
      chain.push_back(v);
      v = parent[v];
    }
    int32_t d = v >= 0 ? depth[v] : -1;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) depth[*it] = ++d;
    max_depth = std::max(max_depth, d);
  }
  std::vector<int32_t> start(static_cast<size_t>(max_depth) + 2, 0);
  for (int32_t d : depth) ++start[static_cast<size_t>(d) + 1];
  for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
  std::vector<int32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[start[depth[i]]++] = static_cast<int32_t>(i);
  return order;
}

}  // namespace

double decay_multiplier(int64_t elapsed_s, int64_t half_life_s) {
  if (elapsed_s <= 0 || half_life_s <= 0) return 1.0;
  const double m = std::exp2(-static_cast<double>(elapsed_s) / static_cast<double>(half_life_s));
  return std::max(m, 0.0);
}

void decay_usage(std::vector<FsNode>& nodes, double m) {
  if (!(m >= 0.0) || m >= 1.0) return;
  for (auto& n : nodes) n.usage_raw *= m;
}

bool add_usage(std::vector<FsNode>& nodes, int32_t index, long double usage, FsIssues& issues) {
  if (index < 0 || static_cast<size_t>(index) >= nodes.size()) return false;
  if (!(usage >= 0.0L) || !std::isfinite(static_cast<double>(usage))) {
    issues.usage_clamped = true;
    return false;
  }
  // Bounded walk: a cyclic parent chain ends after nodes.size() steps.
  for (size_t steps = 0;
       index >= 0 && static_cast<size_t>(index) < nodes.size() && steps <= nodes.size(); ++steps) {
    FsNode& n = nodes[static_cast<size_t>(index)];
    n.usage_raw += usage;
    if (!(n.usage_raw <= kMaxUsageRaw)) {
      n.usage_raw = kMaxUsageRaw;
      issues.usage_clamped = true;
    }
    if (n.parent == index) break;
    index = n.parent;
  }
  return true;
}

long double normalized_usage(long double usage_raw, long double root_usage_raw) {
  if (!(root_usage_raw > 0.0L) || !(usage_raw > 0.0L)) return 0.0L;
  const long double u = usage_raw / root_usage_raw;
  return u > 1.0L ? 1.0L : u;  // a half-life shortened on the fly can leave more than the root
}

long double effective_usage(long double usage_norm, long double parent_efctv, uint32_t shares_raw,
                            uint32_t level_shares, bool parent_is_root) {
  if (parent_is_root) return usage_norm;
  if (shares_raw == kSharesUseParent) return parent_efctv;
  if (level_shares == 0) return parent_efctv;  // no sibling has shares: Slurm's choice
  const long double s = shares_raw >= kSlurmNoVal ? 0.0L : static_cast<long double>(shares_raw);
  return usage_norm + (parent_efctv - usage_norm) * (s / static_cast<long double>(level_shares));
}

void compute_fairshare(std::vector<FsNode>& nodes, FsIssues& issues, double dampening) {
  const std::vector<int32_t> parent = checked_parents(nodes, issues);
  const std::vector<int32_t> order = parents_first(parent);
  const size_t n = nodes.size();
  std::vector<int32_t> root(n, -1);
  std::vector<uint64_t> level_sum(n, 0);

  for (int32_t i : order) {  // fs_parent, root, repaired usage
    FsNode& node = nodes[i];
    const int32_t p = parent[i];
    node.usage_raw = repaired(node.usage_raw, issues);
    if (p < 0) {
      node.fs_parent = -1;
      root[i] = i;
      continue;
    }
    root[i] = root[p];
    const bool p_is_root = parent[p] < 0;
    node.fs_parent =
        (p_is_root || nodes[p].shares_raw != kSharesUseParent) ? p : nodes[p].fs_parent;
    if (node.shares_raw != kSharesUseParent) level_sum[node.fs_parent] += shares_of(node);
  }

  for (int32_t i : order) {
    FsNode& node = nodes[i];
    const int32_t p = parent[i];
    if (p < 0) {
      node.level_shares = 0;
      node.shares_norm = 1.0;
      node.usage_norm = node.usage_raw > 0.0L ? 1.0L : 0.0L;
      node.usage_efctv = 1.0L;
      node.fs_factor = fairshare_factor(node.usage_efctv, node.shares_norm, dampening);
      continue;
    }
    const int32_t f = node.fs_parent;
    const FsNode& fp = nodes[f];
    const uint64_t level = level_sum[f];
    node.level_shares = static_cast<uint32_t>(std::min<uint64_t>(level, UINT32_MAX));
    if (node.shares_raw == kSharesUseParent) {
      node.shares_norm = fp.shares_norm;
    } else {
      const uint64_t s = shares_of(node);
      if (s == 0) issues.zero_shares.push_back(node.id);
      const double ratio = level == 0 ? 0.0 : static_cast<double>(s) / static_cast<double>(level);
      node.shares_norm = ratio * nodes[p].shares_norm;
    }
    node.usage_norm = normalized_usage(node.usage_raw, nodes[root[i]].usage_raw);
    const bool parent_is_root = parent[f] < 0;
    const long double level_ld = static_cast<long double>(level);
    if (parent_is_root || node.shares_raw == kSharesUseParent || level == 0) {
      node.usage_efctv = effective_usage(node.usage_norm, fp.usage_efctv, node.shares_raw,
                                         node.level_shares, parent_is_root);
    } else {  // the same formula, with the exact (64-bit) level sum
      const long double s = static_cast<long double>(shares_of(node));
      node.usage_efctv = node.usage_norm + (fp.usage_efctv - node.usage_norm) * (s / level_ld);
    }
    node.fs_factor = fairshare_factor(node.usage_efctv, node.shares_norm, dampening);
  }
}

std::string format_state(int64_t last_decay) {
  return "version 1\nlast_decay " + std::to_string(last_decay) + "\n";
}

std::optional<int64_t> parse_state(std::string_view text) {
  constexpr std::string_view kHead = "version 1\nlast_decay ";
  if (text.substr(0, kHead.size()) != kHead) return std::nullopt;
  text.remove_prefix(kHead.size());
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || v <= 0 || end == text.data() + text.size() || *end != '\n') {
    return std::nullopt;
  }
  return v;
}

}  // namespace sp
