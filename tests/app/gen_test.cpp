// `flowsketch gen`, stationary mode and command line: determinism, pinned
// output, well-formed frames, exact truth, the statistics of what it draws
// (tolerances derived from each estimator's variance), pcapng, and the errors
// it refuses with.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "capture/file/pcap_file_source.hpp"
#include "core/key/hash.hpp"
#include "src/gen/distributions.hpp"
#include "tests/support/gen_support.hpp"

namespace {

using namespace flowsketch::gen_test;

TEST(Gen, SameSeedGivesIdenticalBytes) {
    const std::vector<std::string> common = {"--packets", "20000",  "--flows", "500",    "--ipv6",
                                             "0.5",       "--vlan", "0.3",     "--seed", "42"};
    auto a = common;
    a.insert(a.end(), {"--out", tmp_path("same_a.pcap")});
    auto b = common;
    b.insert(b.end(), {"--out", tmp_path("same_b.pcap")});
    ASSERT_EQ(run_gen(a), 0);
    ASSERT_EQ(run_gen(b), 0);
    const std::string pcap_a = read_bytes(tmp_path("same_a.pcap"));
    EXPECT_GT(pcap_a.size(), 20000u * 16);
    EXPECT_TRUE(pcap_a == read_bytes(tmp_path("same_b.pcap")));
    EXPECT_EQ(read_bytes(tmp_path("same_a.pcap.truth.tsv")),
              read_bytes(tmp_path("same_b.pcap.truth.tsv")));
}

TEST(Gen, DifferentSeedGivesDifferentTraffic) {
    ASSERT_EQ(run_gen({"--packets", "2000", "--flows", "100", "--seed", "1", "--out",
                       tmp_path("seed1.pcap")}),
              0);
    ASSERT_EQ(run_gen({"--packets", "2000", "--flows", "100", "--seed", "2", "--out",
                       tmp_path("seed2.pcap")}),
              0);
    EXPECT_NE(read_bytes(tmp_path("seed1.pcap")), read_bytes(tmp_path("seed2.pcap")));
    const Truth t1 = read_truth(tmp_path("seed1.pcap.truth.tsv"));
    const Truth t2 = read_truth(tmp_path("seed2.pcap.truth.tsv"));
    EXPECT_NE(t1.keys, t2.keys);
}

// Pins the exact output of a small run. Our PRNG, sampling and writer are all
// specified bit for bit, so this must hold on every platform; change it only
// when the generator's output changes on purpose.
TEST(Gen, GoldenOutputIsStable) {
    ASSERT_EQ(run_gen({"--packets", "64", "--flows", "8", "--ipv6", "0.5", "--vlan", "0.5",
                       "--seed", "7", "--out", tmp_path("golden.pcap")}),
              0);
    const std::string pcap = read_bytes(tmp_path("golden.pcap"));
    const std::string truth = read_bytes(tmp_path("golden.pcap.truth.tsv"));
    EXPECT_EQ(flowsketch::core::hash64(pcap.data(), pcap.size(), 0), 0xfa280f03ef17f481ULL);
    EXPECT_EQ(flowsketch::core::hash64(truth.data(), truth.size(), 0), 0x5391bbf70656820fULL);
}

TEST(Gen, PcapMatchesTruthAndHeadersAreValid) {
    const std::string out = tmp_path("full.pcap");
    const std::uint64_t packets = 100'000;
    const double ipv6 = 0.3;
    const double vlan = 0.25;
    const double rate = 50'000;
    ASSERT_EQ(run_gen({"--packets", std::to_string(packets),
                       "--flows",   "2000",
                       "--ipv6",    "0.3",
                       "--vlan",    "0.25",
                       "--tcp",     "0.6",
                       "--sizes",   "60:5,200:3,1500:2",
                       "--rate",    "50000",
                       "--snaplen", "2000",
                       "--start",   "1600000000",
                       "--seed",    "3",
                       "--out",     out,
                       "--truth",   tmp_path("full.tsv")}),
              0);
    const Truth truth = read_truth(tmp_path("full.tsv"));
    const PcapScan scan = scan_pcap(out);

    EXPECT_EQ(truth.header, "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes");
    EXPECT_EQ(scan.frames, packets);
    EXPECT_EQ(truth.comments.at("frames"), std::to_string(packets));
    EXPECT_EQ(truth.comments.at("ip_packets"), std::to_string(packets));
    EXPECT_EQ(truth.comments.at("seed"), "3");
    EXPECT_EQ(truth.comments.at("flows"), std::to_string(truth.flows.size()));
    std::uint64_t bytes = 0;
    for (const auto& [key, counts] : scan.flows) bytes += counts.bytes;
    EXPECT_EQ(truth.comments.at("ip_bytes"), std::to_string(bytes));
    // Exact per-flow agreement, in both directions.
    EXPECT_TRUE(scan.flows == truth.flows);

    // Sorted by packets descending.
    for (std::size_t i = 1; i < truth.keys.size(); ++i) {
        ASSERT_GE(truth.flows.at(truth.keys[i - 1]).packets, truth.flows.at(truth.keys[i]).packets);
    }

    EXPECT_EQ(scan.snaplen, 2000u);
    EXPECT_EQ(scan.bad_caplen, 0u);
    EXPECT_EQ(scan.bad_ipv4_checksums, 0u);
    EXPECT_EQ(scan.l4_checksums_checked, packets);
    EXPECT_EQ(scan.bad_l4_checksums, 0u);
    EXPECT_EQ(scan.outside_prefixes, 0u);
    EXPECT_EQ(scan.non_monotonic, 0u);
    // A flow is tagged on every packet or on none.
    for (const auto& key : scan.vlan_flows) EXPECT_EQ(scan.untagged_flows.count(key), 0u) << key;

    // Each flow is IPv6 (VLAN) independently with probability 0.3 (0.25), and
    // whether a flow sends at all depends on its rank only, not on its family or
    // tag: the share among active flows is a binomial proportion over them.
    const auto n = static_cast<double>(scan.flows.size());
    expect_share(static_cast<double>(scan.ipv6_flows.size()) / n, ipv6, n, "IPv6 share");
    expect_share(static_cast<double>(scan.vlan_flows.size()) / n, vlan, n, "VLAN share");

    // Frame sizes: 1500-byte frames are never raised to fit headers, so their
    // count is Binomial(packets, 2/10).
    expect_share(static_cast<double>(scan.wire_sizes.at(1500)) / static_cast<double>(packets), 0.2,
                 static_cast<double>(packets), "1500-byte share");

    // Arrivals: the span is a sum of packets-1 exponential gaps of mean 1/rate:
    // mean (P-1)/rate, standard deviation sqrt(P-1)/rate; timestamps are floored to
    // microseconds, which adds at most 1 us.
    EXPECT_DOUBLE_EQ(scan.first_time, 1600000000.0);
    const double gaps = static_cast<double>(packets - 1);
    EXPECT_NEAR(scan.last_time - scan.first_time, gaps / rate, 4 * std::sqrt(gaps) / rate + 1e-6);
}

TEST(Gen, SnaplenTruncatesCapturedBytesOnly) {
    const std::string out = tmp_path("snap.pcap");
    ASSERT_EQ(run_gen({"--packets", "5000", "--flows", "50", "--out", out, "--vlan", "0.5",
                       "--ipv6", "0.5"}),
              0);
    const PcapScan scan = scan_pcap(out);
    EXPECT_EQ(scan.snaplen, 128u);
    EXPECT_EQ(scan.frames, 5000u);
    EXPECT_EQ(scan.bad_caplen, 0u);
    EXPECT_EQ(scan.bad_ipv4_checksums, 0u);
    EXPECT_TRUE(scan.flows == read_truth(out + ".truth.tsv").flows);
}

TEST(Gen, TopFlowShareMatchesZipf) {
    // Rank 1 has probability p1 = 1 / H(n, s) with H(n, s) = sum_{r<=n} r^-s; its
    // packet count is Binomial(P, p1). With s = 1.1 rank 2 has p1 / 2.14, so the
    // top line of the truth is rank 1 (many standard errors apart).
    const std::uint64_t packets = 200'000;
    const int flows = 1000;
    const double s = 1.1;
    const std::string out = tmp_path("zipf.pcap");
    ASSERT_EQ(run_gen({"--packets", std::to_string(packets), "--flows", std::to_string(flows),
                       "--zipf", "1.1", "--seed", "11", "--out", out}),
              0);
    double h = 0;
    for (int r = 1; r <= flows; ++r) h += std::pow(r, -s);
    const double p1 = 1 / h;
    const double p2 = std::pow(2, -s) / h;
    const Truth truth = read_truth(out + ".truth.tsv");
    ASSERT_GE(truth.keys.size(), 2u);
    const auto P = static_cast<double>(packets);
    expect_share(static_cast<double>(truth.flows.at(truth.keys[0]).packets) / P, p1, P, "rank 1");
    expect_share(static_cast<double>(truth.flows.at(truth.keys[1]).packets) / P, p2, P, "rank 2");
}

TEST(Gen, AliasTableSamplesItsWeights) {
    // Each category's count is Binomial(N, p_i); 4 standard errors each.
    const std::vector<double> weights = {1, 2, 3, 4, 0, 10};
    flowsketch::gen::AliasTable table(weights);
    flowsketch::gen::Rng rng(5);
    const int n = 400'000;
    std::vector<int> counts(weights.size());
    for (int i = 0; i < n; ++i) ++counts[table.sample(rng)];
    EXPECT_EQ(counts[4], 0);
    for (std::size_t i = 0; i < weights.size(); ++i) {
        expect_share(static_cast<double>(counts[i]) / n, weights[i] / 20, n, "alias category");
    }
}

TEST(Gen, TruthCommandReproducesTheRun) {
    const std::string out = tmp_path("repro.pcap");
    ASSERT_EQ(run_gen({"--packets", "3000",          "--flows", "77",     "--zipf",    "0.7",
                       "--sizes",   "100:1,900:0.5", "--rate",  "1234.5", "--ipv6",    "0.4",
                       "--vlan",    "0.1",           "--tcp",   "0.5",    "--snaplen", "96",
                       "--start",   "1000",          "--seed",  "99",     "--out",     out}),
              0);
    const std::string command = read_truth(out + ".truth.tsv").comments.at("command");
    const std::string prefix = "(output paths omitted): flowsketch gen ";
    ASSERT_TRUE(command.starts_with(prefix)) << command;
    std::vector<std::string> args;
    std::istringstream words(command.substr(prefix.size()));
    for (std::string w; words >> w;) args.push_back(w);
    args.insert(args.end(), {"--out", tmp_path("repro2.pcap")});
    ASSERT_EQ(run_gen(args), 0);
    EXPECT_TRUE(read_bytes(out) == read_bytes(tmp_path("repro2.pcap")));
    EXPECT_EQ(read_bytes(out + ".truth.tsv"), read_bytes(tmp_path("repro2.pcap.truth.tsv")));
}

// --format pcapng: the same packets (libpcap reads both files to the same
// frames, times and lengths), the same truth but for its command line, which
// reproduces the pcapng file.
TEST(Gen, PcapngHoldsTheSamePacketsAsPcap) {
    const std::vector<std::string> common = {"--packets", "5000", "--flows", "300", "--ipv6", "0.5",
                                             "--vlan", "0.3", "--snaplen", "90", "--seed", "5",
                                             "--syn-flood", "200"};
    auto classic = common;
    classic.insert(classic.end(), {"--out", tmp_path("fmt.pcap")});
    auto ng = common;
    ng.insert(ng.end(), {"--format", "pcapng", "--out", tmp_path("fmt.pcapng")});
    ASSERT_EQ(run_gen(classic), 0);
    ASSERT_EQ(run_gen(ng), 0);
    const std::string ng_bytes = read_bytes(tmp_path("fmt.pcapng"));
    ASSERT_GE(ng_bytes.size(), 4u);
    EXPECT_EQ(ng_bytes.substr(0, 4), std::string("\x0a\x0d\x0d\x0a", 4)) << "a section header block";

    using flowsketch::capture::Frame;
    using flowsketch::capture::PcapFileSource;
    using flowsketch::capture::ReadStatus;
    using flowsketch::capture::RecordReader;
    PcapFileSource a(tmp_path("fmt.pcap"), "", RecordReader::libpcap);
    PcapFileSource b(tmp_path("fmt.pcapng"), "", RecordReader::libpcap);
    EXPECT_EQ(a.link_type(), b.link_type());
    std::uint64_t frames = 0;
    for (;;) {
        Frame fa, fb;
        const ReadStatus sa = a.next(fa);
        ASSERT_EQ(sa, b.next(fb)) << "frame " << frames << ": " << b.damage_message();
        if (sa != ReadStatus::frame) break;
        ASSERT_EQ(fa.timestamp_ns, fb.timestamp_ns) << "frame " << frames;
        ASSERT_EQ(fa.captured_length, fb.captured_length) << "frame " << frames;
        ASSERT_EQ(fa.wire_length, fb.wire_length) << "frame " << frames;
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(fa.data), fa.captured_length),
                  std::string(reinterpret_cast<const char*>(fb.data), fb.captured_length))
            << "frame " << frames;
        ++frames;
    }
    EXPECT_EQ(frames, 5200u);

    // The truth differs only in its command line, which ends with the format and reproduces it.
    auto without_command = [](std::string text) {
        const auto at = text.find("# command ");
        if (at != std::string::npos) text.erase(at, text.find('\n', at) - at);
        return text;
    };
    EXPECT_EQ(without_command(read_bytes(tmp_path("fmt.pcap.truth.tsv"))),
              without_command(read_bytes(tmp_path("fmt.pcapng.truth.tsv"))));
    const Truth tb = read_truth(tmp_path("fmt.pcapng.truth.tsv"));
    const std::string command = tb.comments.at("command");
    ASSERT_TRUE(command.ends_with(" --format pcapng")) << command;
    const std::string prefix = "(output paths omitted): flowsketch gen ";
    std::vector<std::string> args;
    std::istringstream words(command.substr(prefix.size()));
    for (std::string w; words >> w;) args.push_back(w);
    args.insert(args.end(), {"--out", tmp_path("fmt2.pcapng")});
    ASSERT_EQ(run_gen(args), 0);
    EXPECT_TRUE(ng_bytes == read_bytes(tmp_path("fmt2.pcapng")));
}

TEST(Gen, RejectsInvalidOptions) {
    const std::string out = tmp_path("invalid.pcap");
    const std::vector<std::vector<std::string>> bad = {
        {},  // --out is required
        {"--packets", "0"},
        {"--packets", "-5"},
        {"--packets", "many"},
        {"--flows", "0"},
        {"--flows", "100000000"},
        {"--zipf", "-1"},
        {"--zipf", "nan"},
        {"--zipf", "inf"},
        {"--sizes", "64"},
        {"--sizes", "10:1"},
        {"--sizes", "70000:1"},
        {"--sizes", "64:-1"},
        {"--sizes", "64:0,1500:0"},
        {"--sizes", "64:1,"},
        {"--rate", "0"},
        {"--rate", "-3"},
        {"--ipv6", "1.5"},
        {"--vlan", "-0.1"},
        {"--tcp", "x"},
        {"--snaplen", "0"},
        {"--snaplen", "300000"},
        {"--start", "5000000000"},
        {"--seed", "-1"},
        {"--truth", out},
        {"--format", "pcapng2"},
        {"--format", ""},
    };
    for (auto args : bad) {
        if (!args.empty()) args.insert(args.end(), {"--out", out});
        std::string joined;
        for (const auto& a : args) joined += a + " ";
        EXPECT_THROW(parse_gen(args), CLI::ParseError) << joined;
    }
    EXPECT_NO_THROW(parse_gen({"--out", out, "--zipf", "0", "--ipv6", "1", "--sizes",
                               "60:1,65535:0.001", "--rate", "1e9"}));
}

// Timestamps past 2106 do not fit classic pcap's 32-bit seconds: a clear
// error in either format, never wrapped seconds.
TEST(Gen, PacketsPast2106AreRefusedInEitherFormat) {
    for (const char* format : {"pcap", "pcapng"}) {
        const std::string err = tmp_path("late.err");
        const int status = std::system((std::string(FLOWSKETCH_BINARY) + " gen --out " +
                                        tmp_path("late.pcap") +
                                        " --packets 100 --rate 10 --start 4294967290 --format " +
                                        format + " 2>" + err)
                                           .c_str());
        ASSERT_TRUE(WIFEXITED(status));
        EXPECT_EQ(WEXITSTATUS(status), 1) << format;
        const std::string message = read_bytes(err);
        EXPECT_NE(message.find("falls after 2106-02-07"), std::string::npos) << message;
        EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
    }
}

TEST(Gen, UsageErrorExitsWithTwoAndIoErrorWithOne) {
    const std::string bin = FLOWSKETCH_BINARY;
    const int usage = std::system((bin + " gen --out /dev/null --packets 0 2>/dev/null").c_str());
    ASSERT_TRUE(WIFEXITED(usage));
    EXPECT_EQ(WEXITSTATUS(usage), 2);
    EXPECT_EQ(run_gen({"--packets", "10", "--out", "/nonexistent-dir/x.pcap"}), 1);
}

}  // namespace
