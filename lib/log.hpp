// The one log sink of the suite. lib/ reports through it; each plugin provides the sink that
// forwards to Slurm's log with its "plugin_type: " prefix, so every message is greppable by
// plugin and arrives whole.
#pragma once

#include <string_view>

namespace sp {

enum class LogLevel { Error, Info, Verbose, Debug };

// The helpers are log_info() etc., not info(): Slurm's log.h defines info(), error(), debug()
// and verbose() as function-like macros in every translation unit that includes it.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(LogLevel level, std::string_view message) = 0;

  void log_error(std::string_view m) { write(LogLevel::Error, m); }
  void log_info(std::string_view m) { write(LogLevel::Info, m); }
  void log_verbose(std::string_view m) { write(LogLevel::Verbose, m); }
  void log_debug(std::string_view m) { write(LogLevel::Debug, m); }
};

}  // namespace sp
