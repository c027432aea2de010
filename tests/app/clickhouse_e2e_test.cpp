// --clickhouse, `flowsketch clickhouse-schema` and `flowsketch query` against
// a real ClickHouse server (tests/support/clickhouse_server.hpp), through the
// binary. The bound under test: sketches summed inside ClickHouse are the
// sketches `flowsketch merge` sums, so `query` prints merge's reports for the
// same windows, field by field; a width mismatch is an error, never padding;
// a server killed mid-run loses no window; a client keeps its connection.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "src/clickhouse_schema.hpp"
#include "src/clickhouse_tsv.hpp"
#include "tests/support/clickhouse_server.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
    const std::string dir = tmp_path(name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// 6 s of traffic from `start` (UNIX seconds), 30,000 packets over 800 Zipf flows.
std::string make_trace(const std::string& dir, const std::string& start = "1700000000") {
    const std::string out = dir + "/trace.pcap";
    const RunResult gen =
        run_flowsketch("gen --out " + out + " --packets 30000 --flows 800 --rate 5000 --seed 5 --start " + start);
    if (gen.exit_code != 0) throw std::runtime_error("gen failed: " + gen.err);
    return out;
}

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> reports;
    for (const std::string& line : lines_of(text)) reports.push_back(json::parse(line));
    return reports;
}

std::string snapshots_of(const std::string& dir) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() == ".fsnap") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    std::string list;
    for (const std::string& file : files) list += " " + file;
    return list;
}

std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() == ".fsnap") names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

// Every field of every report the same (named on failure).
void expect_same_reports(const std::string& merged, const std::string& queried) {
    const std::vector<json> a = json_lines(merged);
    const std::vector<json> b = json_lines(queried);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (std::size_t i = 0; i < a.size(); ++i) {
        for (const auto& [field, value] : a[i].items()) {
            EXPECT_EQ(value, b[i].value(field, json())) << "report " << i << " field " << field;
        }
        EXPECT_EQ(a[i].size(), b[i].size()) << "report " << i;
    }
}

class ClickHouseExport : public ::testing::Test {
protected:
    void SetUp() override {
        server_ = std::make_unique<ClickHouseServer>();
        const RunResult schema = run_flowsketch("clickhouse-schema --clickhouse " + server_->url());
        ASSERT_EQ(schema.exit_code, 0) << schema.err;
    }
    std::string measure(const std::string& trace, const std::string& probe, const std::string& dir,
                        const std::string& extra = "") {
        const RunResult run = run_flowsketch("-r " + trace + " -q --interval 1 --format json --probe " + probe +
                                             " --seed 7 --snapshot-dir " + dir + " --clickhouse " + server_->url() +
                                             " " + extra);
        EXPECT_EQ(run.exit_code, 0) << run.err;
        return run.out;
    }
    // query over all windows in ClickHouse prints what merge prints of `files`.
    void expect_query_is_merge(const std::string& files, const std::string& interval) {
        const RunResult merged = run_flowsketch("merge" + files + " --format json --interval " + interval);
        ASSERT_EQ(merged.exit_code, 0) << merged.err;
        const RunResult queried =
            run_flowsketch("query --clickhouse " + server_->url() + " --format json --interval " + interval);
        ASSERT_EQ(queried.exit_code, 0) << interval << ": " << queried.err;
        expect_same_reports(merged.out, queried.out);
    }
    std::unique_ptr<ClickHouseServer> server_;
};

TEST_F(ClickHouseExport, QueryPrintsTheReportsMergePrintsForTheSameWindows) {
    const std::string dir = fresh_dir("ch-query");
    const std::string trace = make_trace(dir);
    measure(trace, "edge-1", dir + "/snaps");
    measure(trace, "edge-2", dir + "/snaps", "--key src/24");
    // edge-2 has another key spec: merge refuses the pair, and so must query.
    const RunResult mixed = run_flowsketch("query --clickhouse " + server_->url());
    EXPECT_EQ(mixed.exit_code, 1);
    EXPECT_NE(mixed.err.find("key specs"), std::string::npos) << mixed.err;
    fs::remove_all(dir + "/snaps");
    server_->client().execute("TRUNCATE TABLE intervals");
    server_->client().execute("TRUNCATE TABLE sketch_rows");
    server_->client().execute("TRUNCATE TABLE candidates");
    measure(trace, "edge-1", dir + "/snaps");
    measure(trace, "edge-2", dir + "/snaps");
    const std::string files = snapshots_of(dir + "/snaps");
    for (const std::string interval : {"0", "2"}) {
        const RunResult merged = run_flowsketch("merge" + files + " --format json --interval " + interval);
        ASSERT_EQ(merged.exit_code, 0) << merged.err;
        const RunResult queried =
            run_flowsketch("query --clickhouse " + server_->url() + " --format json --interval " + interval);
        ASSERT_EQ(queried.exit_code, 0) << queried.err;
        expect_same_reports(merged.out, queried.out);
    }
    // One probe, a time range: the windows starting in [start + 1, start + 4).
    const std::vector<json> whole = json_lines(run_flowsketch("merge" + files + " --format json --interval 1").out);
    const auto start = static_cast<long long>(whole.front()["start"].get<double>());
    const RunResult one = run_flowsketch("query --clickhouse " + server_->url() + " --format json --probe edge-2 --from " +
                                         std::to_string(start + 1) + " --to " + std::to_string(start + 4));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    std::vector<std::string> chosen;
    for (const auto& entry : fs::directory_iterator(dir + "/snaps")) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("edge-2-", 0) == 0 && entry.path().extension() == ".fsnap") chosen.push_back(entry.path().string());
    }
    std::sort(chosen.begin(), chosen.end());
    ASSERT_GE(chosen.size(), 5u);
    const std::string some = " " + chosen[1] + " " + chosen[2] + " " + chosen[3];
    const RunResult merged_some = run_flowsketch("merge" + some + " --format json");
    ASSERT_EQ(merged_some.exit_code, 0) << merged_some.err;
    expect_same_reports(merged_some.out, one.out);
}

// Reports over whole minutes and hours come from the rollups: they stay
// merge's reports once the sketch rows are dropped (as retention drops them
// first); a report that needs the sketch rows says they are missing.
TEST_F(ClickHouseExport, WholeMinutesAndHoursAreReadFromTheRollups) {
    const std::string dir = fresh_dir("ch-rollups");
    const std::string trace = make_trace(dir);
    measure(trace, "edge-1", dir + "/snaps", "--key dst");
    measure(trace, "edge-2", dir + "/snaps", "--key dst");
    const std::string files = snapshots_of(dir + "/snaps");
    server_->client().execute("TRUNCATE TABLE sketch_rows");
    for (const std::string interval : {"0", "60", "3600"}) expect_query_is_merge(files, interval);
    const std::vector<json> whole = json_lines(run_flowsketch("merge" + files + " --format json --interval 1").out);
    ASSERT_FALSE(whole.empty());
    const auto start = static_cast<long long>(whole.front()["start"].get<double>());
    for (const std::string& part : std::vector<std::string>{" --interval 2", " --from " + std::to_string(start + 1)}) {
        const RunResult queried = run_flowsketch("query --clickhouse " + server_->url() + part);
        EXPECT_EQ(queried.exit_code, 1) << part;
        EXPECT_EQ(queried.out, "") << part;
        EXPECT_NE(queried.err.find("no sketch rows"), std::string::npos) << part << ": " << queried.err;
    }
}

// A report of a whole minute from its rollup and of two windows before it
// from the sketch rows is merge's report of those windows; with the two
// windows' rows gone, query says how many windows its sums hold.
TEST_F(ClickHouseExport, AReportFromARollupAndSketchRowsCountsEveryWindowOnce) {
    const std::string dir = fresh_dir("ch-mixed");
    const std::string trace = make_trace(dir, "1700000037");  // windows from 3 s before a whole minute
    measure(trace, "edge-1", dir + "/snaps");
    std::vector<std::string> names = names_in(dir + "/snaps");
    ASSERT_EQ(names.size(), 6u);
    ASSERT_EQ(names.front(), "edge-1-20231114T221357.000Z-interval.fsnap");
    std::string files;
    for (std::size_t i = 1; i < names.size(); ++i) files += " " + dir + "/snaps/" + names[i];
    const RunResult merged = run_flowsketch("merge" + files + " --format json");
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    const std::string query = "query --clickhouse " + server_->url() + " --format json --from 1700000038";
    const RunResult queried = run_flowsketch(query);
    ASSERT_EQ(queried.exit_code, 0) << queried.err;
    expect_same_reports(merged.out, queried.out);
    server_->client().execute("TRUNCATE TABLE sketch_rows");
    const RunResult partial = run_flowsketch(query);
    EXPECT_EQ(partial.exit_code, 1);
    EXPECT_EQ(partial.out, "");
    EXPECT_NE(partial.err.find("sketch rows of 3 of the 5 windows"), std::string::npos) << partial.err;
}

// A retried insert that had reached the server leaves a twin of a window's
// sketch rows, which the rollups sum: that bucket is read from the sketch
// rows, once per window, and the reports stay merge's.
TEST_F(ClickHouseExport, AWindowTwiceInTheRollupsIsReadFromTheSketchRowsOnce) {
    const std::string dir = fresh_dir("ch-twin");
    const std::string trace = make_trace(dir);
    measure(trace, "edge-1", dir + "/snaps");
    server_->client().execute(
        "INSERT INTO sketch_rows SELECT * FROM sketch_rows WHERE start_ns = (SELECT min(start_ns) FROM sketch_rows)");
    const std::string files = snapshots_of(dir + "/snaps");
    for (const std::string interval : {"0", "60", "3600"}) expect_query_is_merge(files, interval);
}

TEST_F(ClickHouseExport, HeavyHitterSqlOfTheDocsRanksWithMergesEstimatesAndBounds) {
    const std::string dir = fresh_dir("ch-sql");
    const std::string trace = make_trace(dir);
    measure(trace, "edge-1", dir + "/snaps");
    measure(trace, "edge-2", dir + "/snaps");
    const RunResult merged = run_flowsketch("merge" + snapshots_of(dir + "/snaps") + " --format json --top 5");
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    const json report = json::parse(lines_of(merged.out).back());
    const std::string rows = server_->client().execute(
        app::heavy_hitters_sql("flowsketch", "", "5tuple", 0, 0, 4'000'000'000'000'000'000LL, 5) +
        " FORMAT TabSeparated");
    const std::vector<std::string_view> lines = app::tsv::lines(rows);
    ASSERT_EQ(lines.size(), 5u);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::vector<std::string_view> f = app::tsv::fields(lines[i]);
        const json& expected = report["top_packets"][i];
        EXPECT_EQ(app::tsv::text(f[1]), expected["src"].get<std::string>()) << i;
        EXPECT_EQ(app::tsv::u64(f[f.size() - 2]), expected["estimate"].get<std::uint64_t>()) << i;
        EXPECT_EQ(app::tsv::u64(f[f.size() - 1]), expected["lower"].get<std::uint64_t>()) << i;
    }
}

TEST_F(ClickHouseExport, SketchesOfAnotherWidthAreRefusedNotPadded) {
    const std::string dir = fresh_dir("ch-width");
    const std::string trace = make_trace(dir);
    measure(trace, "edge-1", dir + "/a");
    measure(trace, "edge-2", dir + "/b", "--width 5000");
    const RunResult queried = run_flowsketch("query --clickhouse " + server_->url());
    EXPECT_EQ(queried.exit_code, 1);
    EXPECT_EQ(queried.out, "");
    EXPECT_NE(queried.err.find("two sketch configurations"), std::string::npos) << queried.err;
    EXPECT_THROW(server_->client().execute(
                     app::heavy_hitters_sql("flowsketch", "", "5tuple", 0, 0, 4'000'000'000'000'000'000LL, 5)),
                 app::ClickHouseError);
}

TEST_F(ClickHouseExport, ServerKilledMidRunAndRestartedLosesNoWindow) {
    const std::string dir = fresh_dir("ch-kill");
    const std::string trace = make_trace(dir);
    RunResult run;
    // 6 s of packet time at twice their pace: about 3 s of run.
    std::thread probe([&] {
        run = run_flowsketch("-r " + trace + " -q --speed 2 --interval 1 --format json --probe edge-1 --seed 7 "
                             "--snapshot-dir " + dir + "/snaps --clickhouse " + server_->url());
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    server_->kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    server_->start();
    probe.join();
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.err.find("retrying with backoff"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("delivering again"), std::string::npos) << run.err;
    const std::vector<json> reports = json_lines(run.out);
    ASSERT_FALSE(reports.empty());
    EXPECT_GT(reports.back()["clickhouse_retries"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(reports.back()["clickhouse_undelivered_intervals"].get<std::uint64_t>(), 0u);
    const RunResult merged = run_flowsketch("merge" + snapshots_of(dir + "/snaps") + " --format json --interval 1");
    const RunResult queried = run_flowsketch("query --clickhouse " + server_->url() + " --format json --interval 1");
    ASSERT_EQ(queried.exit_code, 0) << queried.err;
    expect_same_reports(merged.out, queried.out);
}

TEST_F(ClickHouseExport, WindowsClickHouseNeverTookAreSpilledCountedAndMergeable) {
    const std::string dir = fresh_dir("ch-down");
    const std::string trace = make_trace(dir);
    server_->kill();
    const RunResult run = run_flowsketch("-r " + trace + " -q --interval 1 --format json --probe edge-1 --seed 7 "
                                         "--clickhouse-queue 2 --clickhouse-timeout 0.2 --snapshot-dir " + dir +
                                         "/snaps --clickhouse " + server_->url());
    EXPECT_EQ(run.exit_code, 1);
    const std::vector<json> reports = json_lines(run.out);
    ASSERT_GE(reports.size(), 6u);
    EXPECT_GT(reports.back()["clickhouse_undelivered_intervals"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(reports.back()["clickhouse_delivered_intervals"].get<std::uint64_t>(), 0u);
    EXPECT_NE(run.err.find("could not be delivered to ClickHouse"), std::string::npos) << run.err;
    const std::string spilled = snapshots_of(dir + "/snaps/clickhouse-undelivered");
    EXPECT_EQ(names_in(dir + "/snaps/clickhouse-undelivered"), names_in(dir + "/snaps")) << "every window is spilled";
    const RunResult merged = run_flowsketch("merge" + spilled + " --format json");
    EXPECT_EQ(merged.exit_code, 0) << merged.err;
    EXPECT_EQ(json::parse(merged.out)["packets"], 30000);
}

// The client's port as the server sees it while this statement runs.
std::string client_port(app::ClickHouseClient& client) {
    return client.execute("SELECT port FROM system.processes WHERE query LIKE '%client-port-probe%'");
}

TEST_F(ClickHouseExport, AClientKeepsItsConnectionAndReplacesOneTheServerClosed) {
    app::ClickHouseClient client = server_->client("default");
    const std::string first = client_port(client);
    ASSERT_FALSE(first.empty());
    EXPECT_EQ(client_port(client), first) << "the second statement came on the first one's connection";
    server_->kill();
    server_->start();
    // The kept connection died with the server: the next statement goes on a new one, without an error.
    const std::string after = client_port(client);
    ASSERT_FALSE(after.empty());
    EXPECT_NE(after, first);
    EXPECT_EQ(client_port(client), after);
}

TEST_F(ClickHouseExport, AConnectionIdleForTwoSecondsIsNotReused) {
    // The test server keeps idle connections for 10 s (keep_alive_timeout unset): the client lets go first.
    app::ClickHouseClient client = server_->client("default");
    const std::string first = client_port(client);
    ASSERT_FALSE(first.empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    const std::string after = client_port(client);
    ASSERT_FALSE(after.empty());
    EXPECT_NE(after, first);
}

TEST(ClickHouseOptions, AUrlOfAnotherSchemeOrABadPortIsAUsageError) {
    for (const std::string url : {"https://127.0.0.1:8123", "http://127.0.0.1:0", "http://user:pw@127.0.0.1:8123",
                                  "127.0.0.1:8123", "http://:8123"}) {
        const RunResult run = run_flowsketch("query --clickhouse " + url);
        EXPECT_EQ(run.exit_code, 2) << url;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
    }
}

}  // namespace
}  // namespace flowsketch::testing
