// The progress line: what it says, that it stays on stderr and is erased
// before reports, and when it is shown.
#include <gtest/gtest.h>

#include "src/progress_meter.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using app::ProgressMeter;

TEST(ProgressLine, FilesShowShareSizesRateAndEta) {
    const std::string line =
        ProgressMeter::line(ProgressMeter::Input::files, 512 * 1024, 2048 * 1024, 150'000, 2.0);
    EXPECT_EQ(line, " 25.0% 512.0 KiB of 2.0 MiB  150k packets  75k pkt/s  0:02  ETA 0:06");
}

TEST(ProgressLine, PipeHasNoTotalAndLiveCountsPacketsOnly) {
    EXPECT_EQ(ProgressMeter::line(ProgressMeter::Input::pipe, 3 * 1024 * 1024, 0, 2'500'000, 3725.0),
              "3.0 MiB read  2.5M packets  671 pkt/s  1:02:05");
    EXPECT_EQ(ProgressMeter::line(ProgressMeter::Input::live, 0, 0, 999, 0.5), "999 packets  1998 pkt/s  0:01");
}

// --progress forces the line when stderr is not a terminal: it is drawn on
// stderr, erased before the report, and stdout carries the report alone.
TEST(ProgressLine, ForcedLineStaysOnStderrAndIsErased) {
    const RunResult run = run_flowsketch("-r " + pcap_path("zeek-mixed-vlan-mpls.pcap") +
                                         " --progress --interval 0 --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.err.find("100.0%"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(" packets "), std::string::npos) << run.err;
    EXPECT_EQ(run.err.substr(run.err.size() - 4), "\r\x1b[K") << "erased at the end";
    EXPECT_EQ(run.out.find('\r'), std::string::npos);
    EXPECT_EQ(run.out.find('\x1b'), std::string::npos);
    EXPECT_EQ(lines_of(run.out).size(), 1u);
}

TEST(ProgressLine, OffWhenStderrIsNotATerminalAndWithQuiet) {
    const std::string input = "-r " + pcap_path("zeek-mixed-vlan-mpls.pcap") + " --interval 0";
    EXPECT_EQ(run_flowsketch(input).err, "");
    EXPECT_EQ(run_flowsketch(input + " --quiet").err, "");
    const RunResult both = run_flowsketch(input + " --quiet --progress");
    EXPECT_EQ(both.exit_code, 2);
    EXPECT_EQ(lines_of(both.err).size(), 1u) << both.err;
}

}  // namespace
}  // namespace flowsketch::testing
