// Walks of Slurm's Lists. An iterator Slurm creates is linked into its list until destroyed, and
// every later removal from the list walks it: one leaked by an exception (an allocation failing
// in the loop) stays there for the life of slurmctld. ListWalk destroys it however the walk's
// scope ends.
#pragma once

// slurm.h's exported names (slurm_list_*): the plain ones are macros of slurm_xlator.h, which
// not every includer has seen.
extern "C" {
#include "config.h"
#include <slurm/slurm.h>
}

namespace sp {

template <typename T>
class ListWalk {
 public:
  explicit ListWalk(List list) noexcept : it_(slurm_list_iterator_create(list)) {}
  ~ListWalk() { slurm_list_iterator_destroy(it_); }
  ListWalk(const ListWalk&) = delete;
  ListWalk& operator=(const ListWalk&) = delete;
  // The next item, nullptr at the end.
  T* next() noexcept { return static_cast<T*>(slurm_list_next(it_)); }

 private:
  ListIterator it_;
};

// A List this code builds and hands on: destroyed (with its items) unless released.
class OwnedList {
 public:
  explicit OwnedList(List list) noexcept : list_(list) {}
  ~OwnedList() {
    if (list_ != nullptr) slurm_list_destroy(list_);
  }
  OwnedList(const OwnedList&) = delete;
  OwnedList& operator=(const OwnedList&) = delete;
  List get() const noexcept { return list_; }
  List release() noexcept {
    List l = list_;
    list_ = nullptr;
    return l;
  }

 private:
  List list_;
};

}  // namespace sp
