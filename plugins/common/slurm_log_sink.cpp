#include "slurm_log_sink.hpp"

// Exported by libslurm / libslurmfull in every Slurm process (also declared by slurm/spank.h).
// Declared here, in a file that includes no Slurm header, so the entry points may include
// log.h or spank.h freely.
extern "C" {
void slurm_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_verbose(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
}

namespace sp {

void SlurmLogSink::write(LogLevel level, std::string_view m) {
  const int n = static_cast<int>(m.size());
  switch (level) {
    case LogLevel::Error: slurm_error("%s: %.*s", type_, n, m.data()); break;
    case LogLevel::Info: slurm_info("%s: %.*s", type_, n, m.data()); break;
    case LogLevel::Verbose: slurm_verbose("%s: %.*s", type_, n, m.data()); break;
    case LogLevel::Debug: slurm_debug("%s: %.*s", type_, n, m.data()); break;
  }
}

}  // namespace sp
