// Parsers for the value types a site writes in preempt.yaml or on a command line:
// durations, signal names and Slurm hostlist expressions. Pure; no Slurm headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sp {

// "90", "90s", "15m", "2h", "3d", or Slurm's "[D-]HH:MM:SS", "MM:SS", "D-HH".
// Returns seconds, or nullopt for anything else (negative values included, and anything
// longer than kMaxDurationSeconds, the longest plain number of seconds it reads: so every
// duration it returns prints with format_duration() as a form it reads back).
inline constexpr int64_t kMaxDurationSeconds = 999'999'999'999;
std::optional<int64_t> parse_duration(std::string_view text);

// "USR1", "SIGUSR1", "usr2", "TERM", or a number 1..64, bare or as "SIG40". Returns the
// signal number; parse_signal(signal_name(n)) == n for every n in 1..64.
std::optional<int> parse_signal(std::string_view text);
// "USR1" for SIGUSR1; "SIG<n>" for a number without a name.
std::string signal_name(int signo);

// "n[3-4,7],gpu01" -> {"n3","n4","n7","gpu01"}; keeps zero padding ("n[01-02]").
// nullopt for malformed input or more than max_hosts names.
std::optional<std::vector<std::string>> expand_hostlist(std::string_view expr,
                                                        std::size_t max_hosts = 65536);

}  // namespace sp

namespace sp {

// The first item of a comma-separated list (as sbatch -p a,b sends partitions) for which
// pred(item) holds, or an empty view. Allocates nothing.
template <typename Pred>
std::string_view first_in_list(std::string_view list, Pred pred) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (!item.empty() && pred(item)) return item;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return {};
}

inline bool list_contains(std::string_view list, std::string_view name) {
  return !first_in_list(list, [&](std::string_view item) { return item == name; }).empty();
}

// Seconds -> Slurm's "[D-]HH:MM:SS", the form users pass to --time.
std::string format_duration(int64_t seconds);
}  // namespace sp
