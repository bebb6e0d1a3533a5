// The LogSink every plugin uses: forwards to Slurm's log (slurmctld, slurmd, slurmstepd or a
// client's stderr, whichever process loaded the plugin) with the "plugin_type: " prefix.
#pragma once

#include <string>

#include "log.hpp"

namespace sp {

class SlurmLogSink final : public LogSink {
 public:
  explicit SlurmLogSink(std::string plugin_type) : type_(std::move(plugin_type)) {}
  void write(LogLevel level, std::string_view message) override;

 private:
  std::string type_;
};

}  // namespace sp
