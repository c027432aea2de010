// Where reports go: --output appends whole reports, CSV has one header, and an
// output that cannot be written ends the run with a clear error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

const std::string ftp_data_capture = pcap_path("suricata-verify-output-eve-ftp-data.pcap");

TEST(Output, JsonLinesFileIsAppendedWholeLines) {
    const std::string path = tmp_path("appended-" + std::to_string(::getpid()) + ".jsonl");
    std::remove(path.c_str());
    for (int run = 0; run < 2; ++run) {
        const RunResult result = run_flowsketch("-r " + ftp_data_capture + " --interval 30 --format json -o " + path);
        ASSERT_EQ(result.exit_code, 0) << result.err;
        EXPECT_EQ(result.out, "") << "--output alone keeps standard output quiet";
    }
    const auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size() % 2, 0u);
    ASSERT_GE(lines.size(), 4u);
    for (const auto& line : lines) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
    EXPECT_EQ(nlohmann::json::parse(lines[lines.size() / 2 - 1]).at("kind"), "final");
    std::remove(path.c_str());
}

TEST(Output, StdoutAsWellAsFile) {
    const std::string path = tmp_path("tee-" + std::to_string(::getpid()) + ".txt");
    std::remove(path.c_str());
    const RunResult result = run_flowsketch("-r " + ftp_data_capture + " --interval 0 -o " + path + " --stdout");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, read_file(path));
    EXPECT_NE(result.out.find("final report"), std::string::npos);
    std::remove(path.c_str());
}

TEST(Output, CsvHasOneHeaderAndARowPerHeavyHitter) {
    const std::string path = tmp_path("rows-" + std::to_string(::getpid()) + ".csv");
    std::remove(path.c_str());
    for (int run = 0; run < 2; ++run) {
        const std::string args = "-r " + ftp_data_capture + " --interval 0 --format csv --top 4 -o " + path;
        ASSERT_EQ(run_flowsketch(args).exit_code, 0);
    }
    const auto lines = csv_heavy_hitter_lines(read_file(path));
    ASSERT_EQ(lines.size(), 1u + 2 * (4 + 4));  // header once; 4 by packets + 4 by bytes per run
    EXPECT_EQ(lines[0].rfind("kind,start,end,ranking,rank,proto,src,dst,sport,dport,estimate,lower", 0), 0u);
    EXPECT_EQ(lines[1].rfind("final,", 0), 0u);
    EXPECT_NE(lines[1].find(",packets,1,2,192.168.0.13,224.0.0.22,0,0,60,"), std::string::npos) << lines[1];
    std::remove(path.c_str());
}

// The totals a heavy-hitter row cannot carry, as `total` rows: the same
// numbers as the JSON report's.
TEST(Output, CsvTotalRowsCarryFramesSkipsAndFlows) {
    const RunResult csv = run_flowsketch("-r " + ftp_data_capture + " --interval 0 --format csv --top 1");
    const RunResult json = run_flowsketch("-r " + ftp_data_capture + " --interval 0 --format json --top 1");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json report = nlohmann::json::parse(lines_of(json.out).at(0));
    const std::vector<std::string> header = split_csv(lines_of(csv.out).at(0));
    const auto column = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    std::map<std::string, std::string> totals;
    for (const std::string& line : lines_of(csv.out)) {
        const std::vector<std::string> fields = split_csv(line);
        ASSERT_EQ(fields.size(), header.size()) << line;
        if (fields[column("ranking")] != "total") continue;
        EXPECT_EQ(fields[column("kind")], "final");
        EXPECT_EQ(fields[column("window_packets")], std::to_string(report.at("packets").get<std::uint64_t>()));
        totals[fields[column("metric")]] = fields[column("value")];
    }
    EXPECT_EQ(totals.at("frames"), std::to_string(report.at("frames").get<std::uint64_t>()));
    EXPECT_EQ(totals.at("bytes"), std::to_string(report.at("bytes").get<std::uint64_t>()));
    for (const auto& [reason, count] : report.at("skipped").items()) {
        EXPECT_EQ(totals.at("skipped." + reason), std::to_string(count.get<std::uint64_t>())) << reason;
    }
    const nlohmann::json& flows = report.at("flows");
    EXPECT_EQ(totals.at("flows.new"), std::to_string(flows.at("new").get<std::uint64_t>()));
    EXPECT_EQ(totals.at("flows.active"), std::to_string(flows.at("active").get<std::uint64_t>()));
    EXPECT_EQ(totals.at("flows.new_undercount_bound"),
              std::to_string(flows.at("new_undercount_bound").get<std::uint64_t>()));
    EXPECT_EQ(totals.at("truncated"), "0");
}

// Counts are the whole numbers a reader means; `precise` keeps them whole.
TEST(Output, JsonFlowCountsAreWholeWithPreciseBeside) {
    const RunResult json = run_flowsketch("-r " + ftp_data_capture + " --interval 0 --format json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json flows = nlohmann::json::parse(lines_of(json.out).at(0)).at("flows");
    for (const char* name : {"active", "expired", "active_lower", "active_upper", "new_undercount_bound",
                             "ended_undercount_bound"}) {
        EXPECT_TRUE(flows.at(name).is_number_unsigned()) << name << " " << flows.at(name);
        EXPECT_TRUE(flows.at("precise").at(name).is_number()) << name;
    }
    const double active = flows.at("precise").at("active").get<double>();
    EXPECT_EQ(flows.at("active").get<std::uint64_t>(), static_cast<std::uint64_t>(std::llround(active)));
    EXPECT_LE(flows.at("active_lower").get<double>(), flows.at("precise").at("active_lower").get<double>());
    EXPECT_GE(flows.at("active_upper").get<double>(), flows.at("precise").at("active_upper").get<double>());
}

TEST(Output, FullDiskIsARuntimeErrorNamingTheOutput) {
    const RunResult result = run_flowsketch("-r " + ftp_data_capture + " --format json -o /dev/full");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find("/dev/full"), std::string::npos) << result.err;
}

TEST(Output, UnopenableOutputFailsBeforeReading) {
    const RunResult result = run_flowsketch("-r " + ftp_data_capture + " -o /nonexistent-dir/reports.json");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find("/nonexistent-dir/reports.json"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace flowsketch::testing
