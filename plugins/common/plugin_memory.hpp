// Keeps this plugin's code mapped for the life of the process.
#pragma once

namespace sp {

// Slurm dlclose()s a plugin after its fini() (at `scontrol reconfigure` when the plugin list
// changes, at shutdown). A background thread of the plugin may still be running then (it is
// never joined, see periodic_thread.hpp), so its code must stay: marks the shared object that
// holds this function RTLD_NODELETE. Returns false (and the reason in `why`) if it cannot.
bool pin_plugin_in_memory(const char** why) noexcept;

}  // namespace sp
