#include "story_slot.hpp"

#include <string>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/slurm_xlator.h"  // xstrdup -> slurm_xstrdup, exported by libslurm
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"
}

namespace sp {

char** story_slot(job_record_t& job, StoryField f) {
  switch (f) {
    case StoryField::SystemComment: return &job.system_comment;
    case StoryField::Comment: return &job.comment;
    case StoryField::AdminComment: break;
  }
  return &job.admin_comment;
}

const char* story_text(const job_record_t& job, StoryField f) {
  return *story_slot(const_cast<job_record_t&>(job), f);
}

char** story_slot(job_desc_msg_t& desc, StoryField f) {
  switch (f) {
    case StoryField::SystemComment: return nullptr;
    case StoryField::Comment: return &desc.comment;
    case StoryField::AdminComment: break;
  }
  return &desc.admin_comment;
}

namespace {

void append(char** slot, const std::string& text) {
  if (*slot != nullptr && **slot != '\0') {
    xstrfmtcat(*slot, " %s", text.c_str());
  } else {
    xfree(*slot);  // an empty string: nothing of anyone's is lost
    *slot = xstrdup(text.c_str());
  }
}

}  // namespace

void add_story_note(job_record_t& job, StoryField f, std::string_view note) {
  append(story_slot(job, f), "slurm-preempt: " + std::string(note) + ";");
}

bool add_story_text(job_desc_msg_t& desc, StoryField f, std::string_view note) {
  char** slot = story_slot(desc, f);
  if (slot == nullptr) return false;
  append(slot, std::string(note));
  return true;
}

}  // namespace sp
