#include "story_note.hpp"

extern "C" {
#include "src/common/xstring.h"
}

namespace sp {

void add_story_note(job_record_t& job, const std::string& note) {
  if (job.admin_comment && *job.admin_comment) {
    xstrfmtcat(job.admin_comment, " slurm-preempt: %s;", note.c_str());
  } else {
    xfree(job.admin_comment);
    job.admin_comment = xstrdup_printf("slurm-preempt: %s;", note.c_str());
  }
}

}  // namespace sp
