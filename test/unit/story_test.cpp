// lib/story.hpp: the notes read back exactly as the writers write them, and one job's story
// merged from its runs' records.
#include "story.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "pause_mark.hpp"
#include "quota.hpp"
#include "test_support.hpp"

namespace sp {
namespace {

using test::ours;
using test::usr1;

constexpr int64_t kT = 1795520340;  // 2026-11-24T11:39:00Z

StoryNote only(const std::string& comment) {
  const auto notes = parse_story_notes(comment);
  EXPECT_EQ(notes.size(), 1U) << comment;
  return notes.empty() ? StoryNote{} : notes.front();
}

// ---- the codec: every writer's text is read back with its fields ----------------------------

TEST(StoryNotes, Preempted) {
  const auto n = only(ours(note_preempted(kT, 42, "owner", "chem", usr1(20))));
  EXPECT_EQ(n.kind, NoteKind::Preempted);
  EXPECT_EQ(n.at, kT);
  EXPECT_EQ(n.by_job, 42U);
  EXPECT_EQ(n.qos, "owner");
  EXPECT_EQ(n.account, "chem");
  EXPECT_EQ(n.signal, 10);
  EXPECT_EQ(n.grace_s, 20);
  const auto unnamed = only(ours(note_preempted(kT, 0, "", "", usr1(5))));
  EXPECT_EQ(unnamed.kind, NoteKind::Preempted);
  EXPECT_EQ(unnamed.by_job, 0U);
  EXPECT_EQ(unnamed.qos, "");
  const auto half = only(ours(note_preempted(kT, 7, "owner", "", usr1(5))));
  EXPECT_EQ(half.kind, NoteKind::Preempted);
  EXPECT_EQ(half.account, "?");
}

TEST(StoryNotes, ExitedInGraceEveryForm) {
  auto n = only(ours(note_exited_in_grace(kT, 3, true, 1)));
  EXPECT_EQ(n.kind, NoteKind::ExitedInGrace);
  EXPECT_EQ(n.exit_status, 3);
  EXPECT_TRUE(n.requeued);
  EXPECT_FALSE(n.held);
  EXPECT_EQ(n.restart, 1U);
  n = only(ours(note_exited_in_grace(kT, 0, true, 2, true)));
  EXPECT_EQ(n.kind, NoteKind::ExitedInGrace);
  EXPECT_TRUE(n.held);
  EXPECT_EQ(n.restart, 2U);
  n = only(ours(note_exited_in_grace(kT, 1, false, 0)));
  EXPECT_EQ(n.kind, NoteKind::ExitedInGrace);
  EXPECT_FALSE(n.requeued);
}

TEST(StoryNotes, KilledAtGraceEndEveryForm) {
  auto n = only(ours(note_killed_at_grace_end(kT, true, 1)));
  EXPECT_EQ(n.kind, NoteKind::KilledAtGraceEnd);
  EXPECT_EQ(n.at, kT);
  EXPECT_TRUE(n.requeued);
  EXPECT_EQ(n.restart, 1U);
  n = only(ours(note_killed_at_grace_end(kT, true, 3, true)));
  EXPECT_TRUE(n.held);
  EXPECT_EQ(n.restart, 3U);
  n = only(ours(note_killed_at_grace_end(kT, false, 0)));
  EXPECT_EQ(n.kind, NoteKind::KilledAtGraceEnd);
  EXPECT_FALSE(n.requeued);
}

TEST(StoryNotes, RequeueAndLostRunNotes) {
  auto n = only(ours(note_requeued_by_job(4)));
  EXPECT_EQ(n.kind, NoteKind::RequeuedByJob);
  EXPECT_EQ(n.restart, 4U);
  n = only(ours(note_requeued_at_pause_end(2)));
  EXPECT_EQ(n.kind, NoteKind::RequeuedAtPauseEnd);
  EXPECT_EQ(n.restart, 2U);
  EXPECT_TRUE(n.held);
  n = only(ours(note_run_lost_paused()));
  EXPECT_EQ(n.kind, NoteKind::RunLost);
}

TEST(StoryNotes, PausedAndResumed) {
  auto n = only(ours(note_paused("erin", false, kT, 30)));
  EXPECT_EQ(n.kind, NoteKind::Paused);
  EXPECT_EQ(n.who, "erin");
  EXPECT_FALSE(n.admin);
  EXPECT_EQ(n.grace_s, 30);
  EXPECT_EQ(n.at, kT);
  n = only(ours(note_paused("root", true, kT, -1)));
  EXPECT_EQ(n.kind, NoteKind::Paused);
  EXPECT_TRUE(n.admin);
  EXPECT_EQ(n.grace_s, -1);
  n = only(ours(note_resumed("erin", true, kT + 5)));
  EXPECT_EQ(n.kind, NoteKind::Resumed);
  EXPECT_TRUE(n.admin);
  EXPECT_EQ(n.at, kT + 5);
  // The pause codec the watcher and sentinel use agrees.
  EXPECT_EQ(last_pause_mark(ours(note_paused("erin", false, kT, 30))).who, "erin");
}

TEST(StoryNotes, FinishedExitedFinishedAndProtected) {
  auto n = only(ours(note_finished("alice", false, kT)));
  EXPECT_EQ(n.kind, NoteKind::Finished);
  EXPECT_EQ(n.who, "alice");
  EXPECT_EQ(n.at, kT);
  n = only(ours(note_exited_finished(kT + 2)));
  EXPECT_EQ(n.kind, NoteKind::ExitedFinished);
  EXPECT_EQ(n.at, kT + 2);
  EXPECT_FALSE(n.requeued);
  const Starvation s{3, kT, kT + 7200, true};
  const StarvationPolicy p{3, 86400, 7200};
  n = only(ours(note_protected(s, p)));
  EXPECT_EQ(n.kind, NoteKind::Protected);
  EXPECT_EQ(n.until, kT + 7200);
  EXPECT_EQ(n.count, 3U);
  EXPECT_EQ(n.window_s, 86400);
  EXPECT_EQ(only("slurm-preempt: protected from preemption until soon;").kind, NoteKind::Unparsed);
  EXPECT_EQ(only("slurm-preempt: finished by alice;").kind, NoteKind::Unparsed);
}

TEST(StoryNotes, SubmissionNoteKeepsItsItems) {
  const auto n = only(
      "slurm-preempt: qos (default)->standby; partition (default)->standby; requeue on; "
      "checkpoint USR1 grace 20s;");
  EXPECT_EQ(n.kind, NoteKind::Submission);
  EXPECT_EQ(n.text,
            "qos (default)->standby; partition (default)->standby; requeue on; checkpoint USR1 "
            "grace 20s");
}

TEST(StoryNotes, ForeignTextIsIgnoredAndOursAroundItKept) {
  const std::string c = "site: moved by ops; ticket 123 " + ours(note_requeued_by_job(1)) +
                        " requeue on; " + ours(note_resumed("erin", false, kT));
  const auto notes = parse_story_notes(c);
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_EQ(notes[0].kind, NoteKind::RequeuedByJob);
  EXPECT_EQ(notes[1].kind, NoteKind::Resumed);
  EXPECT_TRUE(parse_story_notes("an administrator's comment; nothing of ours").empty());
  EXPECT_TRUE(parse_story_notes("").empty());
  // A license item names the license server, "slurm-preempt:", inside it: still an item.
  const auto lic = parse_story_notes("slurm-preempt: qos a->b; license +gpu_chem@slurm-preempt:4;");
  ASSERT_EQ(lic.size(), 1U);
  EXPECT_EQ(lic[0].text, "qos a->b; license +gpu_chem@slurm-preempt:4");
}

TEST(StoryNotes, TruncatedOrGarbledNotesAreUnparsedNotDropped) {
  const std::string full = note_preempted(kT, 42, "owner", "chem", usr1(20));
  for (std::size_t cut = 1; cut < full.size(); ++cut) {
    const auto notes = parse_story_notes("slurm-preempt: " + full.substr(0, cut));
    ASSERT_EQ(notes.size(), 1U) << cut;
    EXPECT_EQ(notes[0].kind, NoteKind::Unparsed) << full.substr(0, cut);
    std::string shown = full.substr(0, cut);
    while (shown.back() == ' ') shown.pop_back();
    EXPECT_EQ(notes[0].text, shown);
  }
  for (const std::string& bad : std::vector<std::string>{
           "preempted at 2026-13-45T99:00:00Z by JobId=4: signal USR1, grace 5 s",
           "preempted at 2026-11-24T11:39:00Z by JobId=x4: signal USR1, grace 5 s",
           "preempted at 2026-11-24T11:39:00Z by JobId=4: signal NOPE, grace 5 s",
           "exited in time at 2026-11-24T11:39:00Z (exit 3), requeued as restart -1",
           "exited in time at 2026-11-24T11:39:00Z (exit 3), requeued as restart 01",
           "killed at grace end 2026-11-24T11:39:00Z, maybe", "paused by  at 2026-11-24T11:39:00Z",
           "resumed by erin at 2026-11-24T11:39:00Z, extra", "something a newer version says",
           std::string("\x01\xff\n", 3)}) {
    const auto notes = parse_story_notes("slurm-preempt: " + bad + ";");
    ASSERT_EQ(notes.size(), 1U) << bad;
    EXPECT_EQ(notes[0].kind, NoteKind::Unparsed) << bad;
  }
  // Told as an event, quoted, never silently left out.
  JobRun r;
  r.job_id = "5";
  r.submit = kT;
  r.admin_comment = "slurm-preempt: preempted at 2026-11-2";
  const auto story = job_story({r}, std::nullopt, {});
  ASSERT_EQ(story.size(), 2U);
  EXPECT_EQ(story[1].event, "unparsed");
  EXPECT_NE(story[1].details.find("preempted at 2026-11-2"), std::string::npos);
}

// ---- Slurm's records --------------------------------------------------------------------------

std::string row(const std::vector<std::string>& f,
                const std::string& delim = std::string(1, kSacctDelimiter)) {
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i) out += (i ? delim : "") + f[i];
  return out + "\n";
}

// A job's owner can put a line break and a whole row in the story field (story.field comment;
// sacctmgr modify job once it has ended): with the delimiter drawn per command, that row is
// the rest of the comment, never a job of its own in events or report.
TEST(StoryRecords, ARowForgedInsideAStoryIsTheRestOfThatStory) {
  const std::string d = sacct_delimiter(0x0123456789abcdefULL);
  EXPECT_EQ(d,
            "\x1f"
            "0123456789abcdef"
            "\x1f");
  EXPECT_NE(sacct_delimiter(1), sacct_delimiter(2));
  const std::vector<std::string> forged = {"9",
                                           "9",
                                           "carol",
                                           "chem",
                                           "owner",
                                           "chem",
                                           "1795520340",
                                           "1795520340",
                                           "1795520341",
                                           "1795520345",
                                           "COMPLETED",
                                           "0:0",
                                           "n1",
                                           "cpu=1,gres/gpu=8",
                                           "slurm-preempt: x;"};
  // The forger cannot know `d`: a forged row with the fixed separator, and one with a guessed
  // delimiter, stay inside the comment of the one real row.
  const std::string guessed = row(forged, sacct_delimiter(7));
  const std::string text =
      row({"7", "7", "alice", "public", "standby", "standby", "1795520340", "1795520340",
           "1795520341", "1795520345", "PREEMPTED", "0:15", "n3", "cpu=1",
           "mine\n" + row(forged).substr(0, row(forged).size() - 1) + "\n" +
               guessed.substr(0, guessed.size() - 1)},
          d);
  const auto all = parse_sacct_all(text, d);
  ASSERT_EQ(all.size(), 1U);
  EXPECT_EQ(all[0].job_id, "7");
  EXPECT_EQ(all[0].admin_comment.substr(0, 5), "mine\n");
  EXPECT_NE(all[0].admin_comment.find("carol"), std::string::npos);
  // Read with the fixed separator instead, the forged row would have been a job of its own.
  EXPECT_EQ(parse_sacct_all(row(forged) + row(forged), std::string(1, kSacctDelimiter)).size(), 2U);
}

TEST(StoryRecords, SacctRowsInRunOrderOfThisJobOnly) {
  const std::string text =
      row({"7", "7", "alice", "public", "standby", "standby", "1795520345", "1795520347",
           "1795520349", "1795520351", "COMPLETED", "0:0", "n3", "a;\nb"}) +
      row({"7", "7", "alice", "public", "standby", "standby", "1795520340", "1795520340",
           "1795520341", "1795520345", "PREEMPTED", "0:15", "n3", "x|y"}) +
      row({"8", "8", "bob", "public", "normal", "public", "1", "1", "1", "1", "COMPLETED", "0:0",
           "n1", ""}) +
      row({"7", "7", "alice", "public", "standby", "standby", "Unknown", "Unknown", "Unknown",
           "Unknown", "CANCELLED by 0", "0:0", "None assigned", ""});
  // The first row's comment had a newline: sacct printed "a;" and "b" on two lines.
  std::string split = text;
  const auto runs = parse_sacct_runs(split, "7");
  ASSERT_EQ(runs.size(), 3U);
  EXPECT_EQ(runs[0].submit, 0);
  EXPECT_EQ(runs[0].state, "CANCELLED");
  EXPECT_EQ(runs[0].nodes, "");
  EXPECT_EQ(runs[1].state, "PREEMPTED");
  EXPECT_EQ(runs[1].admin_comment, "x|y");
  EXPECT_EQ(runs[2].start, 1795520349);
  EXPECT_EQ(runs[2].admin_comment, "a;\nb");
  EXPECT_EQ(runs[2].user, "alice");
  EXPECT_TRUE(parse_sacct_runs("", "7").empty());
  EXPECT_TRUE(parse_sacct_runs("garbage\nmore|garbage\n", "7").empty());
}

TEST(StoryRecords, ShownJob) {
  const std::string text =
      "JobId=9 JobName=x JobState=FAKE Restarts=99\n"
      "   UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A\n"
      "   Priority=0 Nice=0 Account=public QOS=standby\n"
      "   JobState=PENDING Reason=JobHeldUser Dependency=(null)\n"
      "   Requeue=1 Restarts=2 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
      "   SubmitTime=1795520400 EligibleTime=Unknown\n"
      "   StartTime=Unknown EndTime=Unknown Deadline=N/A\n"
      "   Partition=standby AllocNode:Sid=h:1\n"
      "   NodeList=(null)\n"
      "   AdminComment=slurm-preempt: paused by alice at 2026-11-24T11:39:00Z, grace 10 s; \n";
  const auto j = parse_shown_job(text);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->run.job_id, "9");
  EXPECT_EQ(j->run.state, "PENDING");
  EXPECT_EQ(j->reason, "JobHeldUser");
  EXPECT_EQ(j->restarts, 2U);
  EXPECT_EQ(j->run.user, "alice");
  EXPECT_EQ(j->run.submit, 1795520400);
  EXPECT_EQ(j->run.eligible, 0);
  EXPECT_EQ(j->run.nodes, "");
  EXPECT_EQ(j->run.admin_comment,
            "slurm-preempt: paused by alice at 2026-11-24T11:39:00Z, grace 10 s;");
  EXPECT_FALSE(parse_shown_job("slurm_load_jobs error: Invalid job id specified\n").has_value());
}

// A Comment can hold a newline and a line of its own ("Requeue=1 Restarts=4294967295"): no
// restart count past Slurm's 16 bits is taken, so the story never makes room for billions of
// runs (preemptctl events would run out of memory on such a job).
TEST(StoryRecords, AShownRestartCountIsNeverPastSlurms16Bits) {
  const std::string head =
      "JobId=9 JobName=x\n"
      "   JobState=PENDING Reason=None Dependency=(null)\n"
      "   Requeue=1 Restarts=3 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
      "   SubmitTime=1795520400 EligibleTime=Unknown\n";
  auto j = parse_shown_job(head + "   Comment=x \nRequeue=1 Restarts=4294967295\n");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->restarts, 0U);
  EXPECT_LE(job_story({}, j, {}).size(), 4U);
  j = parse_shown_job(head + "   Comment=x \nRequeue=1 Restarts=65535\n");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->restarts, 65535U);
}

// ---- the story --------------------------------------------------------------------------------

JobRun run_of(int64_t submit, int64_t start, int64_t end, std::string state, std::string comment) {
  JobRun r;
  r.job_id = "7";
  r.user = "alice";
  r.account = "public";
  r.qos = "standby";
  r.partition = "standby";
  r.submit = submit;
  r.eligible = submit;
  r.start = start;
  r.end = end;
  r.state = std::move(state);
  r.nodes = start != 0 ? "n3" : "";
  r.exit_code = "0:0";
  r.admin_comment = std::move(comment);
  return r;
}

std::vector<std::string> names(const std::vector<StoryEvent>& s) {
  std::vector<std::string> out;
  for (const auto& e : s) out.push_back(e.event);
  return out;
}

TEST(Story, NeverPreempted) {
  const auto s = job_story({run_of(kT, kT + 1, kT + 9, "COMPLETED", "")}, std::nullopt, {});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "started", "completed"}));
  EXPECT_EQ(s[0].details, "by alice, account public, qos standby, partition standby");
  EXPECT_EQ(s[1].details, "on n3");
  EXPECT_EQ(s[1].nodes, "n3");
  EXPECT_EQ(s[2].details, "exit 0:0");
}

TEST(Story, PreemptedExitedInGraceRequeuedAndCompleted) {
  const std::string routed = "slurm-preempt: qos (default)->standby; requeue on;";
  const std::string notes = routed + " " +
                            ours(note_preempted(kT + 5, 12, "owner", "chem", usr1(20))) + " " +
                            ours(note_exited_in_grace(kT + 8, 0, true, 1));
  // Run 0's record was written before the notes; run 1's has them all.
  auto r1 = run_of(kT + 8, kT + 9, kT + 15, "COMPLETED", notes);
  r1.eligible = kT + 8;
  const auto s = job_story({run_of(kT, kT + 1, kT + 8, "PREEMPTED", routed), r1}, std::nullopt,
                           {{12, "carol"}});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "routed", "started", "preempted",
                                                "signal", "exited", "ended", "requeued", "eligible",
                                                "started", "completed"}));
  EXPECT_EQ(s[3].details, "by JobId=12 of carol (qos owner, account chem)");
  EXPECT_EQ(s[3].by_job, 12U);
  EXPECT_EQ(s[3].by_user, "carol");
  EXPECT_EQ(s[3].run, 0U);
  EXPECT_EQ(s[4].details,
            "USR1 to the job's processes that catch it, grace 20 s (until 2026-11-24T11:39:25Z)");
  EXPECT_EQ(s[5].details, "in its grace (exit 0), requeued as restart 1");
  EXPECT_EQ(s[5].run, 0U);
  EXPECT_EQ(s[6].details, "PREEMPTED, exit 0:0");
  EXPECT_EQ(s[7].details, "as restart 1");
  EXPECT_EQ(s[7].run, 1U);
  EXPECT_EQ(s[9].details, "on n3, restart 1");
  EXPECT_EQ(preemptors_named({r1}, std::nullopt), (std::vector<uint32_t>{12}));
}

TEST(Story, TwoPreemptionsOneKilledAtTheDeadline) {
  const std::string n1 = ours(note_preempted(kT + 5, 12, "owner", "chem", usr1(10))) + " " +
                         ours(note_exited_in_grace(kT + 7, 0, true, 1));
  const std::string n2 = n1 + " " + ours(note_preempted(kT + 30, 13, "owner", "chem", usr1(10))) +
                         " " + ours(note_killed_at_grace_end(kT + 40, true, 2));
  const auto s = job_story({run_of(kT, kT + 1, kT + 7, "PREEMPTED", ""),
                            run_of(kT + 7, kT + 20, kT + 40, "PREEMPTED", n1),
                            run_of(kT + 40, kT + 45, kT + 50, "COMPLETED", n2)},
                           std::nullopt, {{12, "carol"}});
  std::vector<std::string> preempted;
  for (const auto& e : s) {
    if (e.event == "preempted" || e.event == "killed" || e.event == "exited") {
      preempted.push_back(std::to_string(e.run) + " " + e.event + " " + e.details);
    }
  }
  EXPECT_EQ(preempted,
            (std::vector<std::string>{"0 preempted by JobId=12 of carol (qos owner, account chem)",
                                      "0 exited in its grace (exit 0), requeued as restart 1",
                                      "1 preempted by JobId=13 (qos owner, account chem)",
                                      "1 killed at the grace's end, requeued as restart 2"}));
  EXPECT_EQ(s.back().event, "completed");
  EXPECT_EQ(s.back().run, 2U);
  EXPECT_EQ(preemptors_named({run_of(kT, 0, 0, "PENDING", n2)}, std::nullopt),
            (std::vector<uint32_t>{12, 13}));
}

TEST(Story, PauseAndResumeWithTheJobStillHeldThenRunning) {
  const std::string n1 = ours(note_paused("alice", false, kT + 5, 10)) + " " +
                         ours(note_exited_in_grace(kT + 6, 0, true, 1, true));
  const std::string n2 = n1 + " " + ours(note_resumed("alice", false, kT + 30));
  auto held = run_of(kT + 6, 0, 0, "PENDING", n1);
  held.eligible = kT + 20;  // slurmctld still shows a begin time: not eligible while held
  ShownJob now;
  now.run = held;
  now.restarts = 1;
  now.reason = "JobHeldUser";
  auto s = job_story({run_of(kT, kT + 1, kT + 6, "PREEMPTED", "")}, now, {});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "started", "paused", "signal",
                                                "exited", "ended", "requeued", "pending"}));
  EXPECT_EQ(s[2].details, "by alice, grace 10 s");
  EXPECT_EQ(s[4].details, "in its grace (exit 0), requeued held as restart 1 (paused)");
  EXPECT_EQ(s.back().details, "now, reason JobHeldUser");
  EXPECT_EQ(s.back().at, 0);
  // Resumed: slurmctld shows it running again.
  now.run = run_of(kT + 6, kT + 31, 0, "RUNNING", n2);
  now.run.eligible = kT + 30;
  now.run.end = kT + 31 + 1800;  // slurmctld's EndTime of a running job: its time limit
  now.reason = "None";
  s = job_story({run_of(kT, kT + 1, kT + 6, "PREEMPTED", "")}, now, {});
  EXPECT_EQ(names(s),
            (std::vector<std::string>{"submitted", "started", "paused", "signal", "exited", "ended",
                                      "requeued", "resumed", "eligible", "started"}));
  EXPECT_EQ(s[7].details, "by alice");
  EXPECT_EQ(s[7].run, 1U);
}

TEST(Story, HeldWhilePendingAndAnAdministratorsResume) {
  const std::string c =
      ours(note_paused("root", true, kT + 2, -1)) + " " + ours(note_resumed("root", true, kT + 9));
  auto r = run_of(kT, kT + 10, kT + 20, "COMPLETED", c);
  r.eligible = kT + 9;
  const auto s = job_story({r}, std::nullopt, {});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "paused", "resumed", "eligible",
                                                "started", "completed"}));
  EXPECT_EQ(s[1].details, "by root (admin) while pending: held");
  EXPECT_EQ(s[2].details, "by root (admin)");
}

TEST(Story, SelfRequeuePauseEndLostRunAndADuplicatedNoteTellOnce) {
  const std::string dup = ours(note_preempted(kT + 5, 12, "owner", "chem", usr1(20)));
  const std::string c = dup + " " + dup + " " + ours(note_requeued_by_job(1));
  auto s = job_story(
      {run_of(kT, kT + 1, kT + 5, "REQUEUED", ""), run_of(kT + 5, kT + 7, kT + 9, "COMPLETED", c)},
      std::nullopt, {});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "started", "preempted", "signal",
                                                "self-requeued", "ended", "requeued", "eligible",
                                                "started", "completed"}));
  EXPECT_EQ(s[4].run, 0U);
  const std::string p = ours(note_paused("bob", false, kT + 5, 5)) + " " +
                        ours(note_run_lost_paused()) + " " + ours(note_requeued_at_pause_end(1));
  s = job_story({run_of(kT, kT + 1, kT + 10, "REQUEUED", p)}, std::nullopt, {});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "started", "paused", "signal",
                                                "run-lost", "pause-end", "ended"}));
}

TEST(Story, RunsSlurmdbdHasNotYetSeenComeFromSlurmctld) {
  ShownJob now;
  now.run = run_of(kT + 8, kT + 9, kT + 1800, "RUNNING", "");
  now.restarts = 1;
  const auto s = job_story({run_of(kT, kT + 1, kT + 8, "PREEMPTED", "")}, now, {});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "started", "ended", "requeued",
                                                "eligible", "started"}));
  EXPECT_EQ(s.back().details, "on n3, restart 1");
}

TEST(Story, AJobThatSaidFinishedEndsWithoutARequeueAndAProtectionIsTold) {
  const std::string notes = ours(note_preempted(kT + 5, 12, "owner", "chem", usr1(20))) + " " +
                            ours(note_protected({3, kT + 5, kT + 7205, true}, {3, 86400, 7200})) +
                            " " + ours(note_finished("alice", false, kT + 9)) + " " +
                            ours(note_exited_finished(kT + 10));
  const auto s =
      job_story({run_of(kT, kT + 1, kT + 10, "COMPLETED", notes)}, std::nullopt, {{12, "carol"}});
  EXPECT_EQ(names(s), (std::vector<std::string>{"submitted", "started", "preempted", "signal",
                                                "protected", "finished", "exited", "completed"}));
  EXPECT_EQ(s[4].details,
            "from preemption until 2026-11-24T13:39:05Z: preempted 3 times within 86400 s, taken "
            "as a victim last");
  EXPECT_EQ(s[5].details, "by alice: the job's work is done; an exit 0 in a grace is not requeued");
  EXPECT_EQ(s[6].details, "in its grace (exit 0), finished: not requeued");
  for (const auto& e : s) EXPECT_EQ(e.run, 0U) << e.event;
}

TEST(StoryFormat, TableLinesAndJson) {
  const auto s = job_story({run_of(kT, kT + 1, kT + 9, "COMPLETED", "")}, std::nullopt, {});
  EXPECT_EQ(format_story_table(s),
            "2026-11-24T11:39:00Z  run 0   submitted      by alice, account public, qos standby, "
            "partition standby\n"
            "2026-11-24T11:39:01Z  run 0   started        on n3\n"
            "2026-11-24T11:39:09Z  run 0   completed      exit 0:0\n");
  const std::string j = format_story_json("7", s);
  EXPECT_EQ(j.substr(0, 27), "{\"job\":\"7\",\"events\":[\n{\"tim");
  EXPECT_NE(j.find("{\"time\":\"2026-11-24T11:39:01Z\",\"epoch\":1795520341,\"run\":0,"
                   "\"event\":\"started\",\"details\":\"on n3\",\"nodes\":\"n3\"}"),
            std::string::npos);
  EXPECT_EQ(format_story_json("7", {}), "{\"job\":\"7\",\"events\":[\n]}\n");
}

TEST(StoryFormat, JsonStringsAreEscaped) {
  EXPECT_EQ(json_string("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(json_string("\xff\xc3"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(json_string("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
}

}  // namespace
}  // namespace sp
