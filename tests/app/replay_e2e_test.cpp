// End-to-end: the flowsketch binary on the sample captures, checked against
// truth computed independently of our decoder (tshark; pcaps/*.truth.tsv).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/json_reports.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

struct Capture {
    const char* file;
    std::uint64_t flows;  // from pcaps/SOURCES.md
};

const Capture captures[] = {
    {"pcapplusplus-sll.pcap", 27},
    {"suricata-verify-output-eve-ftp-data.pcap", 255},
    {"zeek-mixed-vlan-mpls.pcap", 5},
    {"pcapplusplus-ipv6.pcapng", 26},
    {"pcapplusplus-ip4_fragments.pcap", 3},
    // pcapng with several interfaces, sections, link types, snapshot lengths and units
    {"zed-ng-interfaces.pcapng", 2},
    {"zed-non-overlap.pcapng", 4},
    {"merged-ether-sll.pcapng", 282},
    {"merged-snaplens.pcapng", 260},
    {"generated-pcapng-interfaces.pcapng", 8},
    {"generated-pcapng-sections.pcapng", 6},
};

void PrintTo(const Capture& capture, std::ostream* out) { *out << capture.file; }

class SampleCapture : public ::testing::TestWithParam<Capture> {};

// Totals are exact (they are plain counters); with --top above the number of
// flows every flow is reported, so the reported flow set must equal tshark's,
// and each flow's true count must lie in [lower, estimate].
TEST_P(SampleCapture, MatchesIndependentTruth) {
    const Capture& capture = GetParam();
    const Truth truth = read_truth(pcap_path(std::string(capture.file) + ".truth.tsv"));
    ASSERT_EQ(truth.flows.size(), capture.flows);

    const RunResult run = run_flowsketch("-r " + pcap_path(capture.file) +
                                         " --interval 0 --format json --top 1000");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const json report = final_json_report(run);
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), truth.totals.at("frames"));
    EXPECT_EQ(report.at("packets").get<std::uint64_t>(), truth.totals.at("ip_packets"));
    EXPECT_EQ(report.at("bytes").get<std::uint64_t>(), truth.totals.at("ip_bytes"));
    std::uint64_t skipped = 0;
    for (const auto& [reason, count] : report.at("skipped").items()) skipped += count.get<std::uint64_t>();
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), report.at("packets").get<std::uint64_t>() + skipped);
    EXPECT_FALSE(report.at("truncated").get<bool>());

    for (const char* ranking : {"top_packets", "top_bytes"}) {
        const bool by_packets = std::string(ranking) == "top_packets";
        const json& flows = report.at(ranking);
        ASSERT_EQ(flows.size(), truth.flows.size()) << ranking;
        std::uint64_t previous = UINT64_MAX;
        for (const auto& flow : flows) {
            const auto it = truth.flows.find(truth_key_of(flow));
            ASSERT_NE(it, truth.flows.end()) << "flow not in truth: " << flow.dump();
            const std::uint64_t true_count = by_packets ? it->second.packets : it->second.bytes;
            const auto estimate = flow.at("estimate").get<std::uint64_t>();
            const auto lower = flow.at("lower").get<std::uint64_t>();
            EXPECT_LE(lower, true_count) << flow.dump();
            EXPECT_GE(estimate, true_count) << flow.dump();
            EXPECT_LE(estimate, previous) << "not sorted largest first";
            previous = estimate;
        }
    }
}

// One thread and two give the same reports, byte for byte, also where a pcapng file's
// interfaces of different link types alternate within one read block.
TEST_P(SampleCapture, SameReportsWithEitherThreadCount) {
    const std::string options = "-r " + pcap_path(GetParam().file) + " --interval 1 --format json";
    const RunResult one = run_flowsketch(options + " --threads 1");
    const RunResult two = run_flowsketch(options + " --threads 2");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    ASSERT_EQ(two.exit_code, 0) << two.err;
    EXPECT_EQ(one.out, two.out);
}

INSTANTIATE_TEST_SUITE_P(Pcaps, SampleCapture, ::testing::ValuesIn(captures),
                         [](const auto& param_info) {
                             std::string name = param_info.param.file;
                             for (char& c : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             }
                             return name;
                         });

// A capture from a pipe whose writer has paused (ssh probe tcpdump -w -):
// SIGINT or SIGTERM ends the wait at once, and the final report counts
// every packet the pipe delivered. The pipe is a FIFO this shell keeps open,
// so only the signal can end the run; flowsketch's exit is timed from the kill.
TEST(Replay, StopSignalsEndAWaitForAPipeWithTheFinalReport) {
    const std::string capture = pcap_path("pcapplusplus-ipv6.pcapng");
    const json whole = final_json_report(run_flowsketch("-r " + capture + " --interval 0 --format json"));
    const std::string fifo = tmp_path("signal-fifo");
    const std::string out = tmp_path("signal.out");
    const std::string result = tmp_path("signal.result");
    for (const char* mode : {"--threads 1", "--threads 2", "--speed 1000"}) {
        for (const char* signal : {"INT", "TERM"}) {
            SCOPED_TRACE(std::string(mode) + " SIG" + signal);
            // Ready when its reading thread sleeps in the pipe's read (all of the
            // capture taken), or after 10 s where /proc has no wchan.
            const std::string script =
                "set -u; rm -f " + fifo + "; mkfifo " + fifo + "\n" +
                std::string(FLOWSKETCH_BINARY) + " -r - --interval 0 --format json " + mode +
                " < " + fifo + " > " + out + " 2>/dev/null & pid=$!\n" +
                "exec 3> " + fifo + "; cat " + capture + " >&3\n" +
                "(sleep 30; kill -KILL $pid) </dev/null >/dev/null 2>&1 3>&- & watchdog=$!\n" +
                "for i in $(seq 200); do grep -q pipe_read /proc/$pid/wchan 2>/dev/null && break; sleep 0.05; done\n" +
                "start=$(date +%s%N); kill -" + signal + " $pid; wait $pid; status=$?; end=$(date +%s%N)\n" +
                "kill $watchdog; exec 3>&-; rm -f " + fifo + "\n" +
                "echo $status $(( (end - start) / 1000000 )) > " + result + "\n";
            ASSERT_EQ(std::system(("bash -c '" + script + "'").c_str()), 0);
            int status = -1;
            long elapsed_ms = -1;
            std::istringstream(read_file(result)) >> status >> elapsed_ms;
            EXPECT_EQ(status, 0) << "137: still waiting when the watchdog killed it";
            EXPECT_LT(elapsed_ms, 5000);
            RunResult run;
            run.out = read_file(out);
            const json report = final_json_report(run);
            EXPECT_EQ(report.value("packets", 0), whole.at("packets").get<int>());
            EXPECT_EQ(report.value("frames", 0), whole.at("frames").get<int>());
        }
    }
}

TEST(Replay, FilesFormOneStreamInOrder) {
    const std::string a = pcap_path("zeek-mixed-vlan-mpls.pcap");
    const std::string b = pcap_path("pcapplusplus-ipv6.pcapng");
    const RunResult run = run_flowsketch("-r " + a + " -r " + b + " --interval 0 --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json report = final_json_report(run);
    const Truth ta = read_truth(a + ".truth.tsv");
    const Truth tb = read_truth(b + ".truth.tsv");
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), ta.totals.at("frames") + tb.totals.at("frames"));
    EXPECT_EQ(report.at("packets").get<std::uint64_t>(),
              ta.totals.at("ip_packets") + tb.totals.at("ip_packets"));
}

// The trailing expression is a BPF filter: only TCP frames are read.
TEST(Replay, TrailingBpfExpressionFilters) {
    const std::string file = pcap_path("suricata-verify-output-eve-ftp-data.pcap");
    const Truth truth = read_truth(file + ".truth.tsv");
    std::uint64_t tcp_packets = 0;
    for (const auto& [key, flow] : truth.flows) {
        if (std::get<0>(key) == 6) tcp_packets += flow.packets;
    }
    ASSERT_GT(tcp_packets, 0u);
    const RunResult run = run_flowsketch("-r " + file + " --interval 0 --format json --top 3 tcp");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json report = final_json_report(run);
    EXPECT_EQ(report.at("packets").get<std::uint64_t>(), tcp_packets);
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), tcp_packets);
    EXPECT_EQ(report.at("top_packets").size(), 3u);
    for (const auto& flow : report.at("top_packets")) EXPECT_EQ(flow.at("proto"), 6);
}

// Frames are read in batches of up to 256: counts inside one batch, at its
// edge, across several, and across two files all stop exactly.
TEST(Replay, CountStopsAfterCountFrames) {
    const std::string files = " -r " + pcap_path("pcapplusplus-sll.pcap") + " -r " +
                              pcap_path("suricata-verify-output-eve-ftp-data.pcap");
    for (const std::uint64_t count : {1u, 100u, 256u, 257u, 517u, 518u, 519u, 1000u}) {
        const RunResult run =
            run_flowsketch(files + " -c " + std::to_string(count) + " --interval 0 --format json");
        ASSERT_EQ(run.exit_code, 0) << run.err;
        EXPECT_EQ(final_json_report(run).at("frames").get<std::uint64_t>(), count) << count;
    }
}

// Interval reports partition the run: their sums equal the final report, and
// each interval is one aligned multiple of the interval length.
TEST(Replay, IntervalReportsPartitionTheRun) {
    const RunResult run = run_flowsketch("-r " + pcap_path("suricata-verify-output-eve-ftp-data.pcap") +
                                         " --interval 10 --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto lines = lines_of(run.out);
    ASSERT_GE(lines.size(), 3u);
    std::uint64_t frames = 0, packets = 0, bytes = 0;
    double previous_end = 0;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        const json report = json::parse(lines[i]);
        EXPECT_EQ(report.at("kind"), "interval");
        const double start = report.at("start").get<double>();
        const double end = report.at("end").get<double>();
        EXPECT_NEAR(end - start, 10.0, 1e-6);
        EXPECT_NEAR(std::fmod(start, 10.0), 0.0, 1e-6);
        EXPECT_GE(start, previous_end);
        previous_end = end;
        frames += report.at("frames").get<std::uint64_t>();
        packets += report.at("packets").get<std::uint64_t>();
        bytes += report.at("bytes").get<std::uint64_t>();
        for (const auto& flow : report.at("top_packets")) {
            EXPECT_LE(flow.at("lower").get<std::uint64_t>(), flow.at("estimate").get<std::uint64_t>());
        }
    }
    const json final = json::parse(lines.back());
    EXPECT_EQ(final.at("kind"), "final");
    EXPECT_EQ(final.at("frames").get<std::uint64_t>(), frames);
    EXPECT_EQ(final.at("packets").get<std::uint64_t>(), packets);
    EXPECT_EQ(final.at("bytes").get<std::uint64_t>(), bytes);
}

TEST(Replay, TextReportIsReadable) {
    const RunResult run = run_flowsketch("-r " + pcap_path("suricata-verify-output-eve-ftp-data.pcap") +
                                         " --interval 0 --top 3");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.out.find("final report"), std::string::npos);
    EXPECT_NE(run.out.find("IP packets 1,224"), std::string::npos);
    EXPECT_NE(run.out.find("Top flows by packets"), std::string::npos);
    EXPECT_NE(run.out.find("192.168.0.13:137"), std::string::npos);
    EXPECT_NE(run.out.find("non_ip 126"), std::string::npos);
}

// --no-flows drops the lifecycle and nothing else: every report carries the
// same counts and heavy hitters, without the flows section, in less memory.
TEST(Replay, NoFlowsKeepsEverythingButTheFlows) {
    const std::string input =
        "-r " + pcap_path("suricata-verify-output-eve-ftp-data.pcap") + " --interval 10 --format json";
    const RunResult with_flows = run_flowsketch(input);
    const RunResult without = run_flowsketch(input + " --no-flows");
    ASSERT_EQ(with_flows.exit_code, 0) << with_flows.err;
    ASSERT_EQ(without.exit_code, 0) << without.err;
    const auto tracked = lines_of(with_flows.out);
    const auto untracked = lines_of(without.out);
    ASSERT_GE(tracked.size(), 3u);
    ASSERT_EQ(untracked.size(), tracked.size());
    for (std::size_t i = 0; i < tracked.size(); ++i) {
        json expected = json::parse(tracked[i]);
        json report = json::parse(untracked[i]);
        ASSERT_TRUE(expected.contains("flows"));
        EXPECT_FALSE(report.contains("flows")) << untracked[i];
        EXPECT_LT(report.at("memory_bytes").get<std::uint64_t>(),
                  expected.at("memory_bytes").get<std::uint64_t>() / 4);
        EXPECT_GT(report.at("top_packets").size(), 0u);
        for (json* r : {&expected, &report}) {
            r->erase("flows");
            r->erase("memory_bytes");
        }
        EXPECT_EQ(report, expected) << i;
    }
    const RunResult text = run_flowsketch("-r " + pcap_path("suricata-verify-output-eve-ftp-data.pcap") +
                                          " --interval 0 --no-flows");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Top flows by packets"), std::string::npos);
    EXPECT_EQ(text.out.find("seen filter"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace flowsketch::testing
