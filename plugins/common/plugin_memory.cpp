#include "plugin_memory.hpp"

#include <dlfcn.h>

namespace sp {

bool pin_plugin_in_memory(const char** why) noexcept {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&pin_plugin_in_memory), &info) == 0 ||
      info.dli_fname == nullptr) {
    if (why != nullptr) *why = "dladdr found no shared object";
    return false;
  }
  // RTLD_NOLOAD: the object is loaded already; RTLD_NODELETE: never unmap it. The handle adds
  // a reference that is never dropped, on purpose.
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) == nullptr) {
    if (why != nullptr) *why = dlerror();
    return false;
  }
  return true;
}

}  // namespace sp
