// The LogSink every plugin uses: forwards to Slurm's log (slurmctld, slurmd, slurmstepd or a
// client's stderr, whichever process loaded the plugin) with the "plugin_type: " prefix.
#pragma once

#include "log.hpp"

namespace sp {

// Built before an entry point's guard (its boot log), so it cannot throw: it keeps the
// plugin's plugin_type (a static string of the plugin, which stays mapped while any of its
// threads may log) or a literal, not a copy.
class SlurmLogSink final : public LogSink {
 public:
  explicit SlurmLogSink(const char* plugin_type) noexcept : type_(plugin_type) {}
  void write(LogLevel level, std::string_view message) override;

 private:
  const char* type_;
};

}  // namespace sp
