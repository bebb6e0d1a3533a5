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
// Returns seconds, or nullopt for anything else (negative values included).
std::optional<int64_t> parse_duration(std::string_view text);

// "USR1", "SIGUSR1", "usr2", "TERM", or a number 1..64. Returns the signal number.
std::optional<int> parse_signal(std::string_view text);
// "USR1" for SIGUSR1; "SIG<n>" for a number without a name.
std::string signal_name(int signo);

// "n[3-4,7],gpu01" -> {"n3","n4","n7","gpu01"}; keeps zero padding ("n[01-02]").
// nullopt for malformed input or more than max_hosts names.
std::optional<std::vector<std::string>> expand_hostlist(std::string_view expr,
                                                        std::size_t max_hosts = 65536);

}  // namespace sp

namespace sp {
// Seconds -> Slurm's "[D-]HH:MM:SS", the form users pass to --time.
std::string format_duration(int64_t seconds);
}  // namespace sp
