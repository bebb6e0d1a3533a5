// Issue 16 item 5: where the story lives. The policy key, what Slurm 22.05's accounting keeps,
// the accessor the plugins use, and the readers with foreign text (jobstats' JSON) in the field.
#include <gtest/gtest.h>

#include <string>

#include "checkpoint.hpp"
#include "pause.hpp"
#include "pause_mark.hpp"
#include "policy_loader.hpp"
#include "quota.hpp"
#include "story.hpp"
#include "story_field.hpp"
#include "story_slot.hpp"
#include "watch_adapter.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/slurm_xlator.h"  // xstrdup -> slurm_xstrdup, exported by libslurm
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"
}

#include "test_support.hpp"

namespace sp {
namespace {

using test::load_err;
using test::load_ok;
using test::ours;
using test::usr1;

constexpr int64_t kT = 1795520340;  // 2026-11-24T11:39:00Z

// What Princeton's jobstats stores (JS1: and a JSON summary), with a ';' inside a string and
// the plugins' name in quotes: neither may look like one of our notes.
const std::string kJobstats =
    "JS1:{\"nodes\":{\"n1\":{\"cpus\":2,\"gpus\":{\"0\":[5,95]}}},\"note\":\"a;b c\","
    "\"tool\":\"slurm-preempt\",\"slurm-preempt\":{\"x\":\"y;z\"},\"msg\":\"slurm-preempt: "
    "paused by root (admin) at 2026-11-24T11:00:00Z, grace 5 s\"}";

TEST(StoryFieldPolicy, AdminCommentByDefaultAndEachFieldByName) {
  EXPECT_EQ(load_ok("")->story.field, StoryField::AdminComment);
  EXPECT_EQ(default_policy().story.field, StoryField::AdminComment);
  EXPECT_EQ(load_ok("story: {field: admin_comment}\n")->story.field, StoryField::AdminComment);
  EXPECT_EQ(load_ok("story:\n  field: system_comment\n")->story.field, StoryField::SystemComment);
  EXPECT_EQ(load_ok("story: {field: comment}\n")->story.field, StoryField::Comment);
  EXPECT_FALSE(*load_ok("story: {field: comment}\n") == *load_ok(""));  // a reconfigure sees it
}

TEST(StoryFieldPolicy, ABadValueOrKeyNamesFileLineAndColumn) {
  PolicyError e = load_err("version: 1\nstory:\n  field: AdminComment\n");
  EXPECT_EQ(e.file, "test.yaml");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.column, 10);
  EXPECT_EQ(e.message,
            "story.field must be one of admin_comment, system_comment, comment, not "
            "'AdminComment'");
  EXPECT_EQ(e.str().rfind("test.yaml:3:10: ", 0), 0U) << e.str();
  e = load_err("story: {feild: comment}\n");
  EXPECT_EQ(e.line, 1);
  EXPECT_NE(e.message.find("unknown key 'feild' in story"), std::string::npos) << e.message;
  e = load_err("story: {field: [comment]}\n");
  EXPECT_NE(e.message.find("story.field"), std::string::npos) << e.message;
}

TEST(StoryFieldPolicy, CommentCannotGoWithAntiStarvation) {
  const PolicyError e = load_err("starvation: {max_preemptions: 3}\nstory:\n  field: comment\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.column, 10);
  EXPECT_NE(e.message.find("forge"), std::string::npos) << e.message;
  EXPECT_EQ(
      load_ok("starvation: {max_preemptions: 3}\nstory: {field: admin_comment}\n")->story.field,
      StoryField::AdminComment);
}

TEST(StoryField, NamesColumnsAndTheSacctFormat) {
  EXPECT_EQ(story_field_column(StoryField::AdminComment), "AdminComment");
  EXPECT_EQ(story_field_column(StoryField::SystemComment), "SystemComment");
  EXPECT_EQ(story_field_column(StoryField::Comment), "Comment");
  for (const auto f : {StoryField::AdminComment, StoryField::SystemComment, StoryField::Comment}) {
    EXPECT_EQ(parse_story_field_key(story_field_key(f)), f);
  }
  EXPECT_EQ(parse_story_field_key("Comment"), std::nullopt);
  EXPECT_EQ(sacct_format_for(kSacctFormat, StoryField::AdminComment), kSacctFormat);
  EXPECT_EQ(sacct_format_for(kReportSacctFormat, StoryField::AdminComment), kReportSacctFormat);
  const std::string c = sacct_format_for(kReportSacctFormat, StoryField::Comment);
  EXPECT_TRUE(c.ends_with(",AllocTRES,Comment")) << c;
  EXPECT_TRUE(c.starts_with("JobID,JobIDRaw,")) << c;
}

TEST(StoryField, WhatSlurm2205sAccountingKeeps) {
  EXPECT_EQ(story_field_problem(StoryField::AdminComment, false), "");
  EXPECT_EQ(story_field_problem(StoryField::Comment, true), "");
  EXPECT_NE(
      story_field_problem(StoryField::Comment, false).find("AccountingStoreFlags=job_comment"),
      std::string::npos);
  EXPECT_NE(story_field_problem(StoryField::SystemComment, true).find("never sends"),
            std::string::npos);
}

TEST(StoryField, ShownFieldMultiLineAndOneLine) {
  const std::string multi =
      "JobId=7 JobName=x AdminComment=forged\n"
      "   UserId=alice(1001) GroupId=alice(1001)\n"
      "   WorkDir=/tmp\n"
      "   AdminComment=JS1:{\"a\":1} slurm-preempt: requeue on; \n"
      "   Comment=user text \n"
      "   StdErr=/dev/null\n";
  EXPECT_EQ(shown_story_field(multi, StoryField::AdminComment),
            "JS1:{\"a\":1} slurm-preempt: requeue on;");
  EXPECT_EQ(shown_story_field(multi, StoryField::Comment), "user text");
  EXPECT_EQ(shown_story_field(multi, StoryField::SystemComment), "");
  const std::string one =
      "JobId=7 JobName=a AdminComment=forged WorkDir=/tmp AdminComment=ours; "
      "SystemComment=sys Comment=slurm-preempt: paused by root (admin) at x StdErr=/dev/null "
      "Power=\n";
  EXPECT_EQ(shown_story_field(one, StoryField::AdminComment), "ours;");
  EXPECT_EQ(shown_story_field(one, StoryField::SystemComment), "sys");
  EXPECT_EQ(shown_story_field(one, StoryField::Comment),
            "slurm-preempt: paused by root (admin) at x");
  EXPECT_EQ(shown_story_field("JobId=7 JobName=a WorkDir=/tmp Power=", StoryField::Comment), "");
}

// The readers, with jobstats' text first and our notes after it.
TEST(ForeignText, TheCodecReadsOnlyOurNotes) {
  EXPECT_TRUE(parse_story_notes(kJobstats).empty());
  const std::string story = kJobstats + " " +
                            ours(note_preempted(kT, 42, "owner", "chem", usr1(20))) + " " +
                            ours(note_requeued_by_job(1));
  const auto notes = parse_story_notes(story);
  ASSERT_EQ(notes.size(), 2U) << story;
  EXPECT_EQ(notes[0].kind, NoteKind::Preempted);
  EXPECT_EQ(notes[0].at, kT);
  EXPECT_EQ(notes[0].by_job, 42U);
  EXPECT_EQ(notes[1].kind, NoteKind::RequeuedByJob);
}

TEST(ForeignText, PauseFinishedAndStarvationReadOnlyOurNotes) {
  // jobstats' JSON alone: no finished mark, no preemption, and its quoted pause text (after
  // a '"') is not a mark.
  EXPECT_EQ(last_finished_at(kJobstats), 0);
  EXPECT_EQ(last_pause_mark(kJobstats), PauseMark{});
  EXPECT_EQ(last_pause_note(kJobstats), "");
  EXPECT_EQ(noted_pause_grace(kJobstats), -1);
  const StarvationPolicy on{1, 3600, 600};
  EXPECT_EQ(starvation_of(kJobstats, kT, on), Starvation{});
  const std::string story = kJobstats + " " + ours(note_preempted(kT, 42, "owner", "", usr1(5))) +
                            " " + ours(note_resumed("alice", false, kT + 5)) + " " +
                            ours(note_finished("alice", false, kT + 7));
  const PauseMark m = last_pause_mark(story);
  EXPECT_FALSE(m.paused);
  EXPECT_EQ(m.who, "alice");
  EXPECT_EQ(m.at, kT + 5);
  EXPECT_EQ(last_finished_at(story), kT + 7);
  const Starvation s = starvation_of(story, kT + 10, on);
  EXPECT_EQ(s.recent, 1U);
  EXPECT_EQ(s.last, kT);
  EXPECT_TRUE(s.protected_);
}

class StorySlot : public ::testing::Test {
 protected:
  void TearDown() override {
    xfree(job.admin_comment);
    xfree(job.system_comment);
    xfree(job.comment);
    xfree(desc.admin_comment);
    xfree(desc.comment);
  }
  job_record_t job{};
  job_desc_msg_t desc{};
};

TEST_F(StorySlot, EachFieldIsTheJobsOwn) {
  EXPECT_EQ(story_slot(job, StoryField::AdminComment), &job.admin_comment);
  EXPECT_EQ(story_slot(job, StoryField::SystemComment), &job.system_comment);
  EXPECT_EQ(story_slot(job, StoryField::Comment), &job.comment);
  EXPECT_EQ(story_slot(desc, StoryField::AdminComment), &desc.admin_comment);
  EXPECT_EQ(story_slot(desc, StoryField::Comment), &desc.comment);
  EXPECT_EQ(story_slot(desc, StoryField::SystemComment), nullptr);
  EXPECT_EQ(story_text(job, StoryField::Comment), nullptr);
}

TEST_F(StorySlot, NotesAreAppendedAfterForeignTextNeverInItsPlace) {
  job.admin_comment = xstrdup(kJobstats.c_str());
  add_story_note(job, StoryField::AdminComment, "requeued by a job as restart 1");
  EXPECT_EQ(std::string(job.admin_comment),
            kJobstats + " slurm-preempt: requeued by a job as restart 1;");
  // Only the chosen field changes.
  add_story_note(job, StoryField::SystemComment, "x");
  EXPECT_STREQ(job.system_comment, "slurm-preempt: x;");
  EXPECT_EQ(std::string(job.admin_comment),
            kJobstats + " slurm-preempt: requeued by a job as restart 1;");
  EXPECT_EQ(job.comment, nullptr);
  // An empty field takes the note alone.
  job.comment = xstrdup("");
  add_story_note(job, StoryField::Comment, "y");
  EXPECT_STREQ(job.comment, "slurm-preempt: y;");
}

// With the story in Comment its owner writes the field the plugins read back: no note of
// theirs, no line break, no update that would erase the plugins' notes. Elsewhere: anything.
TEST(StoryField, AUsersCommentMayNotForgeSplitOrEraseTheStory) {
  const std::string forged =
      "x " + ours(note_preempted(1795520340, 42, "owner", "chem", test::usr1(20)));
  for (const auto f : {StoryField::AdminComment, StoryField::SystemComment}) {
    EXPECT_EQ(comment_refusal(f, forged, "slurm-preempt: qos standby;"), "");
    EXPECT_EQ(comment_refusal(f, "a\nb", ""), "");
  }
  const auto c = StoryField::Comment;
  EXPECT_EQ(comment_refusal(c, "my run; see wiki", ""), "");
  EXPECT_EQ(comment_refusal(c, "", ""), "");
  // A quoted mark inside a value is no note (jobstats' JSON): allowed.
  EXPECT_EQ(comment_refusal(c, "JS1:{\"msg\":\"slurm-preempt: paused by root at x\"}", ""), "");
  // A tab before the mark: the story's parser trims it, so it is a note too.
  for (const std::string& bad : {forged, std::string("slurm-preempt: killed at grace end x"),
                                 std::string("a;slurm-preempt:x"),
                                 std::string("mine;\tslurm-preempt: killed at grace end x"),
                                 std::string("a\vslurm-preempt: x")}) {
    const std::string why = comment_refusal(c, bad, "");
    EXPECT_NE(why.find("may not hold a note of slurm-preempt's"), std::string::npos) << bad;
    EXPECT_EQ(why.find('\n'), std::string::npos);
  }
  for (const char* split : {"line1\nline2", "a\rb"}) {
    EXPECT_NE(comment_refusal(c, split, "").find("may not hold a line break"), std::string::npos);
  }
  // An update of a Comment that holds notes: refused whatever it sets, even the same text.
  const std::string held = "my run slurm-preempt: qos standby;";
  EXPECT_NE(comment_refusal(c, "new words", held).find("an update would erase them"),
            std::string::npos);
  EXPECT_NE(comment_refusal(c, held, held).find("an update would erase them"), std::string::npos);
  EXPECT_EQ(comment_refusal(c, "new words", "my run, no notes"), "");
}

TEST_F(StorySlot, ASubmissionKeepsTheUsersComment) {
  desc.comment = xstrdup("my run; see wiki");
  EXPECT_TRUE(add_story_text(desc, StoryField::Comment, "slurm-preempt: requeue on;"));
  EXPECT_STREQ(desc.comment, "my run; see wiki slurm-preempt: requeue on;");
  EXPECT_EQ(desc.admin_comment, nullptr);
  EXPECT_FALSE(add_story_text(desc, StoryField::SystemComment, "slurm-preempt: requeue on;"));
  EXPECT_TRUE(add_story_text(desc, StoryField::AdminComment, "slurm-preempt: requeue on;"));
  EXPECT_STREQ(desc.admin_comment, "slurm-preempt: requeue on;");
}

TEST_F(StorySlot, TheWatcherReadsMarksFromTheChosenFieldOnly) {
  job.job_state = JOB_RUNNING;
  job.start_time = static_cast<time_t>(kT);
  const std::string pause = kJobstats + " " + ours(note_paused("erin", false, kT + 1, 30));
  job.comment = xstrdup(pause.c_str());
  job.admin_comment = xstrdup(kJobstats.c_str());
  EXPECT_FALSE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).paused);
  const WatchedJob w = watched_job(job, nullptr, PreemptEnd{}, StoryField::Comment);
  EXPECT_TRUE(w.paused);
  EXPECT_EQ(w.pause_note, note_paused("erin", false, kT + 1, 30));
}

}  // namespace
}  // namespace sp
