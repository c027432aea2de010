// Where reports go: --output appends whole reports, CSV has one header, and an
// output that cannot be written ends the run with a clear error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

const std::string capture = pcap_path("suricata-verify-output-eve-ftp-data.pcap");

TEST(Output, JsonLinesFileIsAppendedWholeLines) {
    const std::string path = tmp_path("appended-" + std::to_string(::getpid()) + ".jsonl");
    std::remove(path.c_str());
    for (int run = 0; run < 2; ++run) {
        const RunResult result = run_flowsketch("-r " + capture + " --interval 30 --format json -o " + path);
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
    const RunResult result = run_flowsketch("-r " + capture + " --interval 0 -o " + path + " --stdout");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, read_file(path));
    EXPECT_NE(result.out.find("final report"), std::string::npos);
    std::remove(path.c_str());
}

TEST(Output, CsvHasOneHeaderAndARowPerHeavyHitter) {
    const std::string path = tmp_path("rows-" + std::to_string(::getpid()) + ".csv");
    std::remove(path.c_str());
    for (int run = 0; run < 2; ++run) {
        ASSERT_EQ(run_flowsketch("-r " + capture + " --interval 0 --format csv --top 4 -o " + path).exit_code, 0);
    }
    const auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size(), 1u + 2 * (4 + 4));  // header once; 4 by packets + 4 by bytes per run
    EXPECT_EQ(lines[0].rfind("kind,start,end,ranking,rank,proto,src,dst,sport,dport,estimate,lower", 0), 0u);
    EXPECT_EQ(lines[1].rfind("final,", 0), 0u);
    EXPECT_NE(lines[1].find(",packets,1,2,192.168.0.13,224.0.0.22,0,0,60,"), std::string::npos) << lines[1];
    std::remove(path.c_str());
}

TEST(Output, FullDiskIsARuntimeErrorNamingTheOutput) {
    const RunResult result = run_flowsketch("-r " + capture + " --format json -o /dev/full");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find("/dev/full"), std::string::npos) << result.err;
}

TEST(Output, UnopenableOutputFailsBeforeReading) {
    const RunResult result = run_flowsketch("-r " + capture + " -o /nonexistent-dir/reports.json");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find("/nonexistent-dir/reports.json"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace flowsketch::testing
