// lib/report: preemptctl report's counting and its three formats, over sacct rows as
// parse_sacct_all reads them and notes as the plugins write them.
#include "report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "pause_mark.hpp"
#include "refund.hpp"
#include "story.hpp"
#include "test_support.hpp"

namespace sp {
namespace {

using test::ours;
using test::usr1;

constexpr int64_t kT = 1'800'000'000;  // a time in the range

std::string preempted(int64_t at, const std::string& qos = "owner") {
  return ours(note_preempted(at, 77, qos, "chem", usr1(60)));
}

JobRun run(const std::string& id, int64_t start, int64_t end, const std::string& comment = "",
           const std::string& tres = "cpu=2,node=1,gres/gpu=2", const std::string& user = "alice",
           const std::string& account = "physics") {
  JobRun r;
  r.job_id = id;
  r.user = user;
  r.account = account;
  r.submit = start - 10;
  r.start = start;
  r.end = end;
  r.state = "COMPLETED";
  r.alloc_tres = tres;
  r.admin_comment = comment;
  return r;
}

TEST(GpusOfTres, UntypedTypedAndNone) {
  EXPECT_EQ(gpus_of_tres("cpu=2,mem=1000M,node=1,billing=2,gres/gpu=4"), 4u);
  EXPECT_EQ(gpus_of_tres("cpu=2,gres/gpu:a100=2,gres/gpu:v100=1"), 3u);
  EXPECT_EQ(gpus_of_tres("gres/gpu=2,gres/gpu:a100=2"), 2u);  // the untyped count is the total
  EXPECT_EQ(gpus_of_tres("cpu=2,mem=1000M,node=1"), 0u);
  EXPECT_EQ(gpus_of_tres(""), 0u);
  EXPECT_EQ(gpus_of_tres("gres/gpu=x,gres/gpumem=8"), 0u);
}

TEST(Percentile, OneTwoMany) {
  EXPECT_EQ(percentile({}, 50), std::nullopt);
  EXPECT_EQ(percentile({7}, 50), 7);
  EXPECT_EQ(percentile({7}, 95), 7);
  EXPECT_EQ(percentile({20, 10}, 50), 10);  // the lower of the middle two
  EXPECT_EQ(percentile({20, 10}, 95), 20);
  std::vector<int64_t> many;
  for (int64_t i = 100; i >= 1; --i) many.push_back(i);
  EXPECT_EQ(percentile(many, 50), 50);
  EXPECT_EQ(percentile(many, 95), 95);
  EXPECT_EQ(percentile({1, 2, 3}, 50), 2);
}

TEST(RunsOf, FiltersByUserAndAccountTheAccountInAnyCase) {
  const std::vector<JobRun> runs = {run("1", kT, kT + 60, "", "", "alice", "physics"),
                                    run("2", kT, kT + 60, "", "", "bob", "physics"),
                                    run("3", kT, kT + 60, "", "", "alice", "chem"),
                                    run("3", kT + 90, kT + 120, "", "", "alice", "chem")};
  const auto ids = [](const std::vector<JobRun>& rs) {
    std::string out;
    for (const JobRun& r : rs) out += r.job_id;
    return out;
  };
  EXPECT_EQ(ids(runs_of(runs, "", "")), "1233");
  EXPECT_EQ(ids(runs_of(runs, "alice", "")), "133");  // both runs of job 3, in their order
  EXPECT_EQ(ids(runs_of(runs, "", "Physics")), "12");
  EXPECT_EQ(ids(runs_of(runs, "alice", "physics")), "1");
  EXPECT_EQ(ids(runs_of(runs, "carol", "")), "");
  EXPECT_EQ(ids(runs_of(runs, "", "phys")), "");  // a whole name, not a prefix
}

TEST(BuildReport, EmptyRange) {
  const Report r = build_report({}, kT);
  EXPECT_EQ(r.jobs, 0u);
  EXPECT_TRUE(r.accounts.empty());
  EXPECT_TRUE(r.users.empty());
  EXPECT_TRUE(r.reasons.empty());
  EXPECT_EQ(format_report_csv(r),
            "scope,name,jobs,jobs_preempted,preemptions,pauses,gpu_hours_run,gpu_hours_lost,"
            "refunded_billing_hours,back_median_s,back_p95_s\r\n");
  EXPECT_EQ(format_report_json(r, "a", "b"),
            "{\"since\":\"a\",\"until\":\"b\",\"jobs\":0,\"accounts\":[],\"users\":[],"
            "\"reasons\":[]}\n");
}

TEST(BuildReport, AJobNeverPreempted) {
  const Report r = build_report({run("1", kT, kT + 3600)}, kT + 9999);
  ASSERT_EQ(r.accounts.size(), 1u);
  const ReportRow& a = r.accounts[0];
  EXPECT_EQ(a.name, "physics");
  EXPECT_EQ(a.jobs, 1u);
  EXPECT_EQ(a.jobs_preempted, 0u);
  EXPECT_EQ(a.preemptions, 0u);
  EXPECT_DOUBLE_EQ(a.gpu_hours_run, 2.0);
  EXPECT_DOUBLE_EQ(a.gpu_hours_lost, 0.0);
  EXPECT_EQ(a.back_median_s(), std::nullopt);
  EXPECT_TRUE(r.reasons.empty());
  ASSERT_EQ(r.users.size(), 1u);
  EXPECT_EQ(r.users[0].name, "alice");
}

TEST(BuildReport, ARunningRunCountsUntilNow) {
  const Report r = build_report({run("1", kT, 0)}, kT + 1800);
  EXPECT_DOUBLE_EQ(r.accounts[0].gpu_hours_run, 1.0);
}

TEST(BuildReport, NoGpusNoGpuHours) {
  const Report r = build_report({run("1", kT, kT + 3600, "", "cpu=2,node=1")}, kT + 9999);
  EXPECT_DOUBLE_EQ(r.accounts[0].gpu_hours_run, 0.0);
}

TEST(BuildReport, SavedInGraceLosesNothing) {
  const std::string c1 = preempted(kT + 3600) + ours(note_exited_in_grace(kT + 3630, 0, true, 1));
  const Report r =
      build_report({run("5", kT, kT + 3630, c1), run("5", kT + 3700, kT + 4000, c1)}, kT + 9999);
  const ReportRow& a = r.accounts[0];
  EXPECT_EQ(a.jobs, 1u);
  EXPECT_EQ(a.jobs_preempted, 1u);
  EXPECT_EQ(a.preemptions, 1u);
  EXPECT_DOUBLE_EQ(a.gpu_hours_lost, 0.0);
  EXPECT_DOUBLE_EQ(a.gpu_hours_run, 2.0 * (3630 + 300) / 3600.0);
  EXPECT_EQ(a.back_after_s, std::vector<int64_t>{100});
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0], (ReportReason{"qos owner", 1}));
}

TEST(BuildReport, RequeuedItselfLosesNothing) {
  const std::string c1 = preempted(kT + 3600) + ours(note_requeued_by_job(1));
  const Report r = build_report({run("5", kT, kT + 3630, c1)}, kT + 9999);
  EXPECT_DOUBLE_EQ(r.accounts[0].gpu_hours_lost, 0.0);
}

TEST(BuildReport, KilledAtGraceEndLosesTheWholeRun) {
  const std::string c1 = preempted(kT + 3600) + ours(note_killed_at_grace_end(kT + 3660, true, 1));
  const Report r =
      build_report({run("6", kT, kT + 3660, c1), run("6", kT + 3800, kT + 4000, c1)}, kT + 9999);
  EXPECT_DOUBLE_EQ(r.accounts[0].gpu_hours_lost, 2.0 * 3660 / 3600.0);
  EXPECT_EQ(r.accounts[0].back_after_s, std::vector<int64_t>{200});
}

TEST(BuildReport, RefundsAreSummedInBillingHours) {
  const std::string c1 = preempted(kT + 3600) + ours(note_killed_at_grace_end(kT + 3660, true, 1)) +
                         " " + ours(note_refunded(kT + 3661, 7200, 0.0));
  const Report r =
      build_report({run("6", kT, kT + 3660, c1), run("6", kT + 3800, kT + 4000, c1)}, kT + 9999);
  EXPECT_DOUBLE_EQ(r.accounts[0].refunded_billing_hours, 2.0);
  EXPECT_DOUBLE_EQ(r.users[0].refunded_billing_hours, 2.0);
  EXPECT_NE(format_report_csv(r).find(",2.00,"), std::string::npos) << format_report_csv(r);
  EXPECT_NE(format_report_json(r, "a", "b").find("\"refunded_billing_hours\":2.00"),
            std::string::npos);
  EXPECT_NE(format_report_table(r).find("refund b-h"), std::string::npos);
}

TEST(BuildReport, ReasonsAsNotedElseByThePreemptorsQos) {
  const JobCheckpoint c = usr1(30);
  const std::string notes =
      ours(note_preempted(kT + 10, 77, "owner", "chem", c, "owner reclaim")) +
      ours(note_preempted(kT + 20, 78, "train", "team-a", c, "quota reclaim")) +
      ours(note_preempted(kT + 30, 79, "normal", "physics", c, "qos")) +
      ours(note_preempted(kT + 40, 80, "build", "team-a", c, "class"));
  const Report r = build_report({run("6", kT, kT + 50, notes)}, kT + 9999);
  EXPECT_EQ(r.reasons,
            (std::vector<ReportReason>{
                {"class", 1}, {"owner reclaim", 1}, {"qos normal", 1}, {"quota reclaim", 1}}));
}

TEST(BuildReport, KilledRunWithoutAnEndEndsAtTheKill) {
  const std::string c1 = preempted(kT + 3600) + ours(note_killed_at_grace_end(kT + 3600, false, 0));
  const Report r = build_report({run("6", kT, 0, c1)}, kT + 99999);
  EXPECT_DOUBLE_EQ(r.accounts[0].gpu_hours_lost, 2.0);
}

TEST(BuildReport, TwoPreemptionsOfOneJob) {
  const std::string c1 = preempted(kT + 100) + ours(note_exited_in_grace(kT + 110, 0, true, 1));
  const std::string c2 =
      c1 + preempted(kT + 1000, "urgent") + ours(note_killed_at_grace_end(kT + 1060, true, 2));
  const Report r = build_report({run("7", kT, kT + 110, c1), run("7", kT + 400, kT + 1060, c2),
                                 run("7", kT + 1500, kT + 2000, c2)},
                                kT + 9999);
  const ReportRow& a = r.accounts[0];
  EXPECT_EQ(a.jobs, 1u);
  EXPECT_EQ(a.jobs_preempted, 1u);
  EXPECT_EQ(a.preemptions, 2u);
  EXPECT_DOUBLE_EQ(a.gpu_hours_lost, 2.0 * 660 / 3600.0);  // the second run, killed
  EXPECT_EQ(a.back_after_s, (std::vector<int64_t>{300, 500}));
  EXPECT_EQ(a.back_median_s(), 300);
  EXPECT_EQ(a.back_p95_s(), 500);
  EXPECT_EQ(r.reasons, (std::vector<ReportReason>{{"qos owner", 1}, {"qos urgent", 1}}));
}

TEST(BuildReport, PauseIsCountedApartFromPreemptions) {
  const std::string c = ours(note_paused("alice", false, kT + 100, 30)) +
                        ours(note_exited_in_grace(kT + 120, 0, true, 1, true));
  const Report r = build_report({run("8", kT, kT + 120, c)}, kT + 9999);
  EXPECT_EQ(r.accounts[0].pauses, 1u);
  EXPECT_EQ(r.accounts[0].preemptions, 0u);
  EXPECT_EQ(r.accounts[0].jobs_preempted, 0u);
  EXPECT_EQ(r.reasons, (std::vector<ReportReason>{{"pause", 1}}));
}

TEST(BuildReport, RowsPerAccountAndPerUser) {
  const Report r =
      build_report({run("1", kT, kT + 3600, "", "gres/gpu=1", "alice", "physics"),
                    run("2", kT, kT + 3600, preempted(kT + 1800), "gres/gpu=1", "bob", "physics"),
                    run("3", kT, kT + 3600, "", "gres/gpu=1", "bob", "chem")},
                   kT + 9999);
  EXPECT_EQ(r.jobs, 3u);
  ASSERT_EQ(r.accounts.size(), 2u);
  EXPECT_EQ(r.accounts[0].name, "chem");
  EXPECT_EQ(r.accounts[0].jobs, 1u);
  EXPECT_EQ(r.accounts[1].name, "physics");
  EXPECT_EQ(r.accounts[1].jobs, 2u);
  EXPECT_EQ(r.accounts[1].jobs_preempted, 1u);
  // No outcome note: no save is known, the whole run is lost.
  EXPECT_DOUBLE_EQ(r.accounts[1].gpu_hours_lost, 1.0);
  ASSERT_EQ(r.users.size(), 2u);
  EXPECT_EQ(r.users[1].name, "bob");
  EXPECT_EQ(r.users[1].jobs, 2u);
  EXPECT_EQ(r.users[1].preemptions, 1u);
}

std::string sacct_row(const std::vector<std::string>& f) {
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i)
    out += (i ? std::string(1, kSacctDelimiter) : "") + f[i];
  return out + "\n";
}

TEST(ParseSacctAll, GroupsRunsByJobAndReadsAllocTres) {
  const std::string t = std::to_string(kT);
  const std::string later = std::to_string(kT + 500);
  const std::string text =
      sacct_row({"9", "9", "alice", "physics", "standby", "standby", later, later, later, "0",
                 "RUNNING", "0:0", "n1", "cpu=2,gres/gpu=1", "x"}) +
      sacct_row({"4", "4", "bob", "chem", "owner", "owned", t, t, t, t, "COMPLETED", "0:0", "n2",
                 "cpu=1", ""}) +
      sacct_row({"9", "9", "alice", "physics", "standby", "standby", t, t, t, later, "PREEMPTED",
                 "0:0", "n1", "cpu=2,gres/gpu=1", "a"}) +
      "line two of a comment\n" +
      sacct_row({"9.batch", "9.batch", "", "physics", "", "", t, t, t, later, "CANCELLED", "0:15",
                 "n1", "", ""});
  const auto runs = parse_sacct_all(text);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].job_id, "9");
  EXPECT_EQ(runs[0].state, "PREEMPTED");
  EXPECT_EQ(runs[0].admin_comment, "a\nline two of a comment");
  EXPECT_EQ(runs[1].job_id, "9");
  EXPECT_EQ(runs[1].state, "RUNNING");
  EXPECT_EQ(runs[1].alloc_tres, "cpu=2,gres/gpu=1");
  EXPECT_EQ(runs[2].job_id, "4");
  EXPECT_EQ(build_report(runs, kT + 1000).jobs, 2u);
}

Report one_row(const std::string& account, const std::string& user) {
  return build_report({run("1", kT, kT + 3600, "", "gres/gpu=1", user, account)}, kT);
}

TEST(FormatReport, CsvQuotesWhatNeedsIt) {
  const std::string csv = format_report_csv(one_row("a,b", "say \"hi\""));
  EXPECT_NE(csv.find("\r\naccount,\"a,b\",1,0,0,0,1.00,0.00,0.00,,\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\r\nuser,\"say \"\"hi\"\"\",1,0,0,0,1.00,0.00,0.00,,\r\n"), std::string::npos)
      << csv;
}

TEST(FormatReport, CsvReasonRows) {
  const std::string c = preempted(kT + 100) + ours(note_exited_in_grace(kT + 110, 0, true, 1));
  const std::string csv = format_report_csv(
      build_report({run("1", kT, kT + 110, c), run("1", kT + 200, kT + 300, c)}, kT + 999));
  EXPECT_NE(csv.find("account,physics,1,1,1,0,0.12,0.00,0.00,100,100\r\n"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("reason,qos owner,,,1,,,,,,\r\n"), std::string::npos) << csv;
}

TEST(FormatReport, JsonEscapesNames) {
  const std::string json = format_report_json(one_row("q\"a\\", "tab\tuser"), "now-7days", "now");
  EXPECT_NE(json.find("\"name\":\"q\\\"a\\\\\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"tab\\tuser\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"back_median_s\":null"), std::string::npos) << json;
  EXPECT_EQ(json.rfind("{\"since\":\"now-7days\",\"until\":\"now\",\"jobs\":1,", 0), 0u) << json;
}

TEST(FormatReport, Table) {
  const std::string c = preempted(kT + 100) + ours(note_killed_at_grace_end(kT + 160, true, 1)) +
                        ours(note_paused("alice", false, kT + 500, 30));
  const std::string table = format_report_table(
      build_report({run("1", kT, kT + 160, c), run("1", kT + 400, kT + 520, c)}, kT + 999));
  EXPECT_EQ(table,
            "project         jobs    preempted  preemptions       pauses    gpu-h run   gpu-h "
            "lost   refund b-h     back p50     back p95\n"
            "physics            1            1            1            1         0.16         "
            "0.09         0.00     00:05:00     00:05:00\n"
            "\n"
            "user            jobs    preempted  preemptions       pauses    gpu-h run   gpu-h "
            "lost   refund b-h     back p50     back p95\n"
            "alice              1            1            1            1         0.16         "
            "0.09         0.00     00:05:00     00:05:00\n"
            "\n"
            "reasons: by qos owner: 1, pause: 1\n");
}

TEST(FormatReport, TableWithoutReasons) {
  const std::string table = format_report_table(one_row("physics", "alice"));
  EXPECT_NE(table.find("reasons: none\n"), std::string::npos) << table;
  EXPECT_NE(table.find("-            -\n"), std::string::npos) << table;
}

TEST(PlotFormat, ByExtensionInEitherCase) {
  EXPECT_EQ(plot_format("out/report.svg"), "svg");
  EXPECT_EQ(plot_format("report.PNG"), "png");
  EXPECT_EQ(plot_format("/tmp/a.b/report.Svg"), "svg");
  EXPECT_EQ(plot_format("report.pdf"), std::nullopt);
  EXPECT_EQ(plot_format("report"), std::nullopt);
  EXPECT_EQ(plot_format("a.svg/report"), std::nullopt);  // a dot in the directory only
  EXPECT_EQ(plot_format("dir/.svg"), std::nullopt);      // a hidden name, no extension
  EXPECT_EQ(plot_format("report.svg.gz"), std::nullopt);
  EXPECT_EQ(plot_format(""), std::nullopt);
}

JobRun on(JobRun r, const std::string& nodes, const std::string& state = "COMPLETED") {
  r.nodes = nodes;
  r.state = state;
  return r;
}

PlotData plot_of(const std::vector<JobRun>& runs, int64_t now) {
  return build_plot(runs, build_report(runs, now), now);
}

TEST(BuildPlot, Empty) {
  const PlotData p = plot_of({}, kT);
  EXPECT_TRUE(p.nodes.empty());
  EXPECT_TRUE(p.segments.empty());
  EXPECT_TRUE(p.marks.empty());
  EXPECT_TRUE(p.accounts.empty());
  EXPECT_EQ(format_plot_json(p, "a", "b", kT),
            "{\"since\":\"a\",\"until\":\"b\",\"now\":1800000000,\"nodes\":[],\"segments\":[],"
            "\"marks\":[],\"accounts\":[]}\n");
}

TEST(BuildPlot, OneSegmentPerNodeOfARunInNaturalOrder) {
  const PlotData p = plot_of({on(run("1", kT, kT + 3600), "n[10,2]"),
                              on(run("2", kT + 10, kT + 20, "", "cpu=1"), "n1", "FAILED")},
                             kT + 9999);
  EXPECT_EQ(p.nodes, (std::vector<std::string>{"n1", "n2", "n10"}));
  ASSERT_EQ(p.segments.size(), 3u);
  EXPECT_EQ(p.segments[0],
            (PlotSegment{"n1", "2", "physics", "alice", kT + 10, kT + 20, "ended", "FAILED", 0}));
  EXPECT_EQ(p.segments[1], (PlotSegment{"n2", "1", "physics", "alice", kT, kT + 3600, "completed",
                                        "COMPLETED", 2}));
  EXPECT_EQ(p.segments[2].node, "n10");
  EXPECT_EQ(p.segments[2].job_id, "1");
  EXPECT_TRUE(p.marks.empty());
}

TEST(BuildPlot, NaturalOrderKeepsPaddingAndPrefixes) {
  const PlotData p = plot_of({on(run("1", kT, kT + 1), "gpu[009-010],n01,n1,n,a2b1,a10b0")}, kT);
  EXPECT_EQ(p.nodes,
            (std::vector<std::string>{"a2b1", "a10b0", "gpu009", "gpu010", "n", "n01", "n1"}));
}

TEST(BuildPlot, ARunningRunEndsNowAndUnstartedOrNodelessRunsAreNotDrawn) {
  JobRun pending = run("3", 0, 0);
  pending.nodes = "None assigned";
  pending.state = "PENDING";
  const PlotData p = plot_of({on(run("1", kT, 0), "n1", "RUNNING"), pending,
                              on(run("2", kT, kT + 5), "None assigned", "CANCELLED"),
                              on(run("4", kT, kT + 5), "", "CANCELLED")},
                             kT + 600);
  EXPECT_EQ(p.nodes, std::vector<std::string>{"n1"});
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.segments[0].end, kT + 600);
  EXPECT_EQ(p.segments[0].outcome, "running");
}

TEST(BuildPlot, SlurmsPreemptedStateWithoutANoteIsShownButNotMarked) {
  const PlotData p = plot_of(
      {on(run("1", kT, kT + 5), "n1", "PREEMPTED"), on(run("1", kT + 20, kT + 30), "n1")}, kT + 99);
  ASSERT_EQ(p.segments.size(), 2u);
  EXPECT_EQ(p.segments[0].outcome, "preempted");
  EXPECT_EQ(p.segments[1].outcome, "completed");
  EXPECT_TRUE(p.marks.empty());
}

TEST(BuildPlot, ANodeListThatIsNoHostlistIsOneRowAsWritten) {
  const PlotData p = plot_of({on(run("1", kT, kT + 5), "n[3-")}, kT + 10);
  EXPECT_EQ(p.nodes, std::vector<std::string>{"n[3-"});
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.segments[0].node, "n[3-");
}

TEST(BuildPlot, SavedPreemptionMarksItAndTheResume) {
  const std::string c1 = preempted(kT + 3600) + ours(note_exited_in_grace(kT + 3630, 0, true, 1));
  const PlotData p = plot_of({on(run("5", kT, kT + 3630, c1), "n[1-2]", "PREEMPTED"),
                              on(run("5", kT + 3700, kT + 4000, c1), "n3")},
                             kT + 9999);
  ASSERT_EQ(p.segments.size(), 3u);
  EXPECT_EQ(p.segments[0].outcome, "saved");
  EXPECT_EQ(p.segments[1].outcome, "saved");
  EXPECT_EQ(p.segments[2].outcome, "completed");
  EXPECT_EQ(p.marks, (std::vector<PlotMark>{{"n1", "5", kT + 3600, "preempted"},
                                            {"n2", "5", kT + 3600, "preempted"},
                                            {"n3", "5", kT + 3700, "resumed"}}));
}

TEST(BuildPlot, KilledPreemptionAndThePerProjectHoursAreTheReportsOwn) {
  const std::string c1 = preempted(kT + 3600) + ours(note_killed_at_grace_end(kT + 3660, true, 1));
  const std::vector<JobRun> runs = {
      on(run("6", kT, kT + 3660, c1, "gres/gpu=2", "dave", "bio"), "n1", "PREEMPTED"),
      on(run("6", kT + 3800, kT + 4000, c1, "gres/gpu=2", "dave", "bio"), "n1"),
      on(run("7", kT, kT + 3600, "", "gres/gpu=1", "bob", "chem"), "n2")};
  const Report r = build_report(runs, kT + 9999);
  const PlotData p = build_plot(runs, r, kT + 9999);
  EXPECT_EQ(p.accounts, r.accounts);
  ASSERT_EQ(p.accounts.size(), 2u);
  EXPECT_DOUBLE_EQ(p.accounts[0].gpu_hours_lost, 2.0 * 3660 / 3600.0);  // bio
  EXPECT_EQ(p.segments[0].outcome, "killed");
  EXPECT_EQ(p.segments[1].outcome, "completed");
  EXPECT_EQ(p.marks, (std::vector<PlotMark>{{"n1", "6", kT + 3600, "preempted"},
                                            {"n1", "6", kT + 3800, "resumed"}}));
}

TEST(BuildPlot, APreemptionNeverFollowedByARunHasNoResume) {
  const std::string c1 = preempted(kT + 100);
  const PlotData p = plot_of({on(run("8", kT, kT + 160, c1), "n1", "PREEMPTED")}, kT + 999);
  EXPECT_EQ(p.segments[0].outcome, "killed");  // no save known
  EXPECT_EQ(p.marks, (std::vector<PlotMark>{{"n1", "8", kT + 100, "preempted"}}));
}

TEST(BuildPlot, APreemptionBeforeAnyRunMarksOnlyTheResume) {
  // A note that predates every run (the clock of the note's writer, or a record lost).
  const std::string c1 = preempted(kT - 50);
  const PlotData p = plot_of({on(run("8", kT, kT + 160, c1), "n1")}, kT + 999);
  EXPECT_EQ(p.segments[0].outcome, "completed");
  EXPECT_EQ(p.marks, (std::vector<PlotMark>{{"n1", "8", kT, "resumed"}}));
}

TEST(BuildPlot, APauseMarksThePauseAndTheResumeOnce) {
  const std::string c = ours(note_paused("alice", false, kT + 100, 30)) +
                        ours(note_exited_in_grace(kT + 120, 0, true, 1, true)) +
                        preempted(kT + 200) + ours(note_exited_in_grace(kT + 210, 0, true, 2));
  // The pause's next run is also the one the preemption hit; the run after is the resume of
  // the preemption only.
  const PlotData p = plot_of({on(run("9", kT, kT + 120, c), "n1", "REQUEUED"),
                              on(run("9", kT + 150, kT + 210, c), "n1", "PREEMPTED"),
                              on(run("9", kT + 300, kT + 400, c), "n1")},
                             kT + 999);
  ASSERT_EQ(p.segments.size(), 3u);
  EXPECT_EQ(p.segments[0].outcome, "paused");
  EXPECT_EQ(p.segments[1].outcome, "saved");
  EXPECT_EQ(p.segments[2].outcome, "completed");
  EXPECT_EQ(p.marks, (std::vector<PlotMark>{{"n1", "9", kT + 100, "paused"},
                                            {"n1", "9", kT + 150, "resumed"},
                                            {"n1", "9", kT + 200, "preempted"},
                                            {"n1", "9", kT + 300, "resumed"}}));
}

TEST(BuildPlot, APauseWithoutARunLeavesNoMark) {
  // Paused while pending: no run was hit, and none followed yet.
  const std::string c = ours(note_paused("alice", false, kT + 100, -1));
  JobRun pending = run("9", 0, 0, c);
  pending.state = "PENDING";
  const PlotData p = plot_of({pending}, kT + 999);
  EXPECT_TRUE(p.segments.empty());
  EXPECT_TRUE(p.marks.empty());
}

TEST(BuildPlot, SegmentsCarryTheJobsAccountAsTheReportCountsIt) {
  // The account changed between runs: the report counts the job in its latest run's.
  const PlotData p =
      plot_of({on(run("1", kT, kT + 10, "", "gres/gpu=1", "alice", "old"), "n1"),
               on(run("1", kT + 20, kT + 30, "", "gres/gpu=1", "alice", "new"), "n1")},
              kT + 99);
  ASSERT_EQ(p.segments.size(), 2u);
  EXPECT_EQ(p.segments[0].account, "new");
  EXPECT_EQ(p.accounts.size(), 1u);
}

TEST(FormatPlotJson, EveryFieldEscaped) {
  const std::string c1 = preempted(kT + 100) + ours(note_exited_in_grace(kT + 110, 0, true, 1));
  const PlotData p =
      plot_of({on(run("5", kT, kT + 110, c1, "gres/gpu=2", "a\"l", "ph\\y"), "n1", "PREEMPTED"),
               on(run("5", kT + 200, kT + 3800, c1, "gres/gpu=2", "a\"l", "ph\\y"), "n1")},
              kT + 9999);
  EXPECT_EQ(format_plot_json(p, "now-1day", "now", kT + 9999),
            "{\"since\":\"now-1day\",\"until\":\"now\",\"now\":1800009999,\"nodes\":[\"n1\"],"
            "\"segments\":[\n"
            "{\"node\":\"n1\",\"job\":\"5\",\"account\":\"ph\\\\y\",\"user\":\"a\\\"l\","
            "\"start\":1800000000,\"end\":1800000110,\"outcome\":\"saved\",\"state\":"
            "\"PREEMPTED\",\"gpus\":2},\n"
            "{\"node\":\"n1\",\"job\":\"5\",\"account\":\"ph\\\\y\",\"user\":\"a\\\"l\","
            "\"start\":1800000200,\"end\":1800003800,\"outcome\":\"completed\",\"state\":"
            "\"COMPLETED\",\"gpus\":2}],\"marks\":[\n"
            "{\"node\":\"n1\",\"job\":\"5\",\"at\":1800000100,\"kind\":\"preempted\"},\n"
            "{\"node\":\"n1\",\"job\":\"5\",\"at\":1800000200,\"kind\":\"resumed\"}],"
            "\"accounts\":[\n"
            "{\"name\":\"ph\\\\y\",\"gpu_hours_run\":2.06,\"gpu_hours_lost\":0.00}]}\n");
}

}  // namespace
}  // namespace sp
