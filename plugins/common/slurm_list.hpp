// Walks of Slurm's Lists, safe for C++ code that may throw (an allocation failing in the loop).
//  - for_each_ro: list_for_each_ro, one read lock of the list for the whole walk and no
//    iterator. The callable runs inside Slurm's C code, holding that lock: an exception is
//    caught there, stops the walk, and is thrown again once Slurm has released the lock.
//  - ListWalk: an iterator, for walks whose body calls Slurm code that may take the list's
//    own lock (list_next takes its write lock for each item). An iterator Slurm creates is
//    linked into its list until destroyed, and every later removal from the list walks it: one
//    leaked by an exception stays there for the life of slurmctld. ListWalk destroys it
//    however the walk's scope ends.
#pragma once

#include <exception>
#include <type_traits>

// slurm.h's exported names (slurm_list_*): the plain ones are macros of slurm_xlator.h, which
// not every includer has seen.
extern "C" {
#include "config.h"
#include <slurm/slurm.h>

// list.h's list_for_each_ro under the name libslurm exports (slurm.h declares the other list
// aliases, not this one).
int slurm_list_for_each_ro(List l, ListForF f, void* arg);
}

namespace sp {

// Calls `f(T*)` for each item of `list` (nullptr: none) under the list's read lock; `f`
// returns false to stop the walk. It must not change `list`. An exception from `f` stops the
// walk and propagates after the lock is released.
template <typename T, typename F>
void for_each_ro(List list, F&& f) {
  if (list == nullptr) return;
  struct Walk {
    std::remove_reference_t<F>* f;
    std::exception_ptr error;
  } walk{&f, nullptr};
  (void)slurm_list_for_each_ro(
      list,
      [](void* item, void* arg) -> int {
        auto* w = static_cast<Walk*>(arg);
        try {
          return (*w->f)(static_cast<T*>(item)) ? 0 : -1;
        } catch (...) {
          w->error = std::current_exception();
          return -1;
        }
      },
      &walk);
  if (walk.error) std::rethrow_exception(walk.error);
}

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
