// `flowsketch gen`: determinism, well-formed frames, exact truth, and the
// statistics of what it draws (tolerances derived from each estimator's variance).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <pcap/pcap.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "capture/decode.hpp"
#include "capture/pcap_file_source.hpp"
#include "core/key/flow_key.hpp"
#include "core/key/hash.hpp"
#include "src/commands.hpp"
#include "src/gen/distributions.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/syn_flood.hpp"
#include "tests/support/flow_truth.hpp"

namespace {

using flowsketch::app::CommandRunner;
using flowsketch::app::setup_gen_command;

std::string tmp_path(const std::string& name) {
    // Per process: ctest runs each test in its own process, several at once.
    return std::string(FLOWSKETCH_TEST_TMP) + "/gen_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Parses `flowsketch gen ARGS` in-process; throws CLI::ParseError on usage errors.
CommandRunner parse_gen(std::vector<std::string> args) {
    CLI::App app{"test"};
    CommandRunner runner;
    setup_gen_command(app, runner);
    args.insert(args.begin(), {"flowsketch", "gen"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return runner;
}

int run_gen(const std::vector<std::string>& args) {
    CommandRunner runner = parse_gen(args);
    if (!runner) return -1;
    return runner();
}

struct FlowCounts {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    friend bool operator==(const FlowCounts&, const FlowCounts&) = default;
};

struct Truth {
    std::map<std::string, std::string> comments;  // "# name value" lines
    std::vector<std::string> keys;                // in file order
    std::map<std::string, FlowCounts> flows;      // "proto\tsrc\tdst\tsport\tdport"
    std::string header;
};

Truth read_truth(const std::string& path) {
    Truth truth;
    std::istringstream in(read_bytes(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("# ")) {
            const auto space = line.find(' ', 2);
            truth.comments[line.substr(2, space - 2)] =
                space == std::string::npos ? "" : line.substr(space + 1);
            continue;
        }
        if (truth.header.empty()) {
            truth.header = line;
            continue;
        }
        std::vector<std::string> cols;
        std::istringstream fields(line);
        for (std::string col; std::getline(fields, col, '\t');) cols.push_back(col);
        EXPECT_EQ(cols.size(), 7u) << line;
        if (cols.size() != 7) continue;
        const std::string key =
            cols[0] + "\t" + cols[1] + "\t" + cols[2] + "\t" + cols[3] + "\t" + cols[4];
        EXPECT_TRUE(
            truth.flows.emplace(key, FlowCounts{std::stoull(cols[5]), std::stoull(cols[6])}).second)
            << "duplicate 5-tuple " << key;
        truth.keys.push_back(key);
    }
    return truth;
}

std::uint32_t sum16(const std::uint8_t* p, std::size_t n) {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < n; i += 2)
        sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
    if (n % 2 != 0) sum += static_cast<std::uint32_t>(p[n - 1] << 8);
    return sum;
}

std::uint16_t fold(std::uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(sum);
}

std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }

/// What the test's own decoder (independent of capture/) finds in a generated pcap.
struct PcapScan {
    std::uint64_t frames = 0;
    std::uint32_t snaplen = 0;
    std::map<std::string, FlowCounts> flows;
    std::set<std::string> ipv6_flows;
    std::set<std::string> vlan_flows;
    std::set<std::string> untagged_flows;
    std::uint64_t bad_ipv4_checksums = 0;
    std::uint64_t l4_checksums_checked = 0;
    std::uint64_t bad_l4_checksums = 0;
    std::uint64_t bad_caplen = 0;
    std::uint64_t outside_prefixes = 0;
    std::uint64_t non_monotonic = 0;
    double first_time = -1;
    double last_time = 0;
    std::map<std::uint32_t, std::uint64_t> wire_sizes;
};

PcapScan scan_pcap(const std::string& path) {
    PcapScan scan;
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* pcap = pcap_open_offline(path.c_str(), errbuf);
    if (pcap == nullptr) {
        ADD_FAILURE() << errbuf;
        return scan;
    }
    EXPECT_EQ(pcap_datalink(pcap), DLT_EN10MB);
    scan.snaplen = static_cast<std::uint32_t>(pcap_snapshot(pcap));
    pcap_pkthdr* hdr = nullptr;
    const std::uint8_t* p = nullptr;
    while (pcap_next_ex(pcap, &hdr, &p) == 1) {
        ++scan.frames;
        ++scan.wire_sizes[hdr->len];
        if (hdr->caplen != std::min(hdr->len, scan.snaplen)) ++scan.bad_caplen;
        const double t =
            static_cast<double>(hdr->ts.tv_sec) + static_cast<double>(hdr->ts.tv_usec) * 1e-6;
        if (scan.first_time < 0) scan.first_time = t;
        if (t < scan.last_time) ++scan.non_monotonic;
        scan.last_time = t;
        // Generated headers fit in 78 bytes; tests use snaplen >= 78.
        std::size_t off = 12;
        const bool vlan = be16(p + off) == 0x8100;
        if (vlan) off += 4;
        const std::uint16_t ethertype = be16(p + off);
        off += 2;
        char src[INET6_ADDRSTRLEN] = {};
        char dst[INET6_ADDRSTRLEN] = {};
        std::uint8_t proto = 0;
        std::uint32_t pseudo = 0;
        std::size_t l4_length = 0;
        bool ipv6 = false;
        if (ethertype == 0x0800) {
            const std::uint8_t* ip = p + off;
            EXPECT_EQ(ip[0], 0x45);
            EXPECT_EQ(be16(ip + 2), hdr->len - off);
            if (fold(sum16(ip, 20)) != 0xffff) ++scan.bad_ipv4_checksums;
            proto = ip[9];
            inet_ntop(AF_INET, ip + 12, src, sizeof src);
            inet_ntop(AF_INET, ip + 16, dst, sizeof dst);
            for (const std::uint8_t* a : {ip + 12, ip + 16}) {
                if (a[0] != 10 && !(a[0] == 198 && (a[1] & 0xfe) == 18)) ++scan.outside_prefixes;
            }
            l4_length = be16(ip + 2) - 20u;
            pseudo = sum16(ip + 12, 8) + proto + static_cast<std::uint32_t>(l4_length);
            off += 20;
        } else if (ethertype == 0x86dd) {
            ipv6 = true;
            const std::uint8_t* ip = p + off;
            EXPECT_EQ(ip[0] >> 4, 6);
            EXPECT_EQ(be16(ip + 4), hdr->len - off - 40);
            proto = ip[6];
            inet_ntop(AF_INET6, ip + 8, src, sizeof src);
            inet_ntop(AF_INET6, ip + 24, dst, sizeof dst);
            for (const std::uint8_t* a : {ip + 8, ip + 24}) {
                if (!(a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)) {
                    ++scan.outside_prefixes;
                }
            }
            l4_length = be16(ip + 4);
            pseudo = sum16(ip + 8, 32) + proto + static_cast<std::uint32_t>(l4_length);
            off += 40;
        } else {
            ADD_FAILURE() << "unexpected ethertype " << ethertype;
            continue;
        }
        EXPECT_TRUE(proto == 6 || proto == 17) << int{proto};
        if (proto == 17) {
            EXPECT_EQ(be16(p + off + 4), l4_length);
        }
        if (hdr->caplen == hdr->len) {
            ++scan.l4_checksums_checked;
            if (fold(pseudo + sum16(p + off, l4_length)) != 0xffff) ++scan.bad_l4_checksums;
        }
        const std::string key = std::to_string(proto) + "\t" + src + "\t" + dst + "\t" +
                                std::to_string(be16(p + off)) + "\t" +
                                std::to_string(be16(p + off + 2));
        FlowCounts& counts = scan.flows[key];
        ++counts.packets;
        counts.bytes += hdr->len;
        if (ipv6) scan.ipv6_flows.insert(key);
        (vlan ? scan.vlan_flows : scan.untagged_flows).insert(key);
    }
    pcap_close(pcap);
    return scan;
}

/// |observed - expected| <= z standard errors of a binomial proportion over n trials.
void expect_share(double observed, double p, double n, const char* what) {
    const double se = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(observed, p, 4 * se) << what << " (4 standard errors, n = " << n << ")";
}

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

// ---------------------------------------------------------------- lifetimes

using flowsketch::testing::FlowEndFlag;
using flowsketch::testing::IntervalLifecycle;
using flowsketch::testing::lifecycle_counts;
using flowsketch::testing::LifetimeFlow;
using flowsketch::testing::LifetimeTruth;
using flowsketch::testing::read_lifetime_truth;

/// Per flow, what the pcap holds: every timestamp (Unix ns) and TCP flag byte.
struct PacketTimes {
    std::vector<std::int64_t> times;
    std::vector<std::uint8_t> tcp_flags;  // empty for UDP
};

std::map<std::string, PacketTimes> scan_times(const std::string& path) {
    std::map<std::string, PacketTimes> flows;
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* pcap = pcap_open_offline(path.c_str(), errbuf);
    if (pcap == nullptr) {
        ADD_FAILURE() << errbuf;
        return flows;
    }
    pcap_pkthdr* hdr = nullptr;
    const std::uint8_t* p = nullptr;
    while (pcap_next_ex(pcap, &hdr, &p) == 1) {
        std::size_t off = be16(p + 12) == 0x8100 ? 16 : 12;
        const bool ipv6 = be16(p + off) == 0x86dd;
        off += 2;
        char src[INET6_ADDRSTRLEN] = {};
        char dst[INET6_ADDRSTRLEN] = {};
        const std::uint8_t proto = ipv6 ? p[off + 6] : p[off + 9];
        inet_ntop(ipv6 ? AF_INET6 : AF_INET, p + off + (ipv6 ? 8 : 12), src, sizeof src);
        inet_ntop(ipv6 ? AF_INET6 : AF_INET, p + off + (ipv6 ? 24 : 16), dst, sizeof dst);
        off += ipv6 ? 40 : 20;
        const std::string key = std::to_string(proto) + "\t" + src + "\t" + dst + "\t" +
                                std::to_string(be16(p + off)) + "\t" +
                                std::to_string(be16(p + off + 2));
        PacketTimes& flow = flows[key];
        flow.times.push_back(static_cast<std::int64_t>(hdr->ts.tv_sec) * 1'000'000'000 +
                             static_cast<std::int64_t>(hdr->ts.tv_usec) * 1000);
        if (proto == 6) flow.tcp_flags.push_back(p[off + 13]);
    }
    pcap_close(pcap);
    return flows;
}

const std::vector<std::string> lifetime_args = {
    "--lifetimes", "--packets", "60000", "--flows", "3000", "--rate", "20000",
    "--duration-mean", "0.4", "--idle-gap", "0.5", "--idle-gap-fraction", "0.3",
    "--ipv6", "0.3", "--vlan", "0.2", "--tcp", "0.7", "--snaplen", "2000", "--seed", "5"};

/// Runs the shared lifetime configuration once per process.
const std::string& lifetime_pcap() {
    static const std::string out = [] {
        const std::string path = tmp_path("life.pcap");
        auto args = lifetime_args;
        args.insert(args.end(), {"--out", path});
        EXPECT_EQ(run_gen(args), 0);
        return path;
    }();
    return out;
}

TEST(GenLifetimes, SameSeedGivesIdenticalBytesAndSeedMatters) {
    auto a = lifetime_args;
    a.insert(a.end(), {"--out", tmp_path("life_a.pcap")});
    ASSERT_EQ(run_gen(a), 0);
    EXPECT_TRUE(read_bytes(lifetime_pcap()) == read_bytes(tmp_path("life_a.pcap")));
    EXPECT_EQ(read_bytes(lifetime_pcap() + ".truth.tsv"),
              read_bytes(tmp_path("life_a.pcap.truth.tsv")));
    auto b = lifetime_args;
    b.back() = "6";
    b.insert(b.end(), {"--out", tmp_path("life_b.pcap")});
    ASSERT_EQ(run_gen(b), 0);
    EXPECT_NE(read_bytes(lifetime_pcap()), read_bytes(tmp_path("life_b.pcap")));
}

TEST(GenLifetimes, PcapAgreesWithTruth) {
    const std::string out = lifetime_pcap();
    const LifetimeTruth truth = read_lifetime_truth(out + ".truth.tsv");
    const PcapScan scan = scan_pcap(out);  // checksums, lengths, per-flow counts
    const auto times = scan_times(out);

    EXPECT_EQ(scan.frames, 60000u);
    EXPECT_EQ(truth.comments.at("frames"), "60000");
    EXPECT_EQ(truth.comments.at("flows"), "3000");
    EXPECT_EQ(truth.comments.at("lifetimes"), "1");
    EXPECT_EQ(truth.gap_min_ns, 125'000'000);  // idle-gap / 4
    ASSERT_EQ(truth.flows.size(), 3000u);  // every configured flow sends
    EXPECT_EQ(scan.non_monotonic, 0u);
    EXPECT_EQ(scan.bad_ipv4_checksums, 0u);
    EXPECT_EQ(scan.bad_l4_checksums, 0u);
    EXPECT_EQ(scan.l4_checksums_checked, 60000u);
    EXPECT_EQ(scan.bad_caplen, 0u);
    EXPECT_DOUBLE_EQ(scan.first_time, 1700000000.0);
    EXPECT_EQ(truth.comments.at("first_packet_ns"), "1700000000000000000");

    std::uint64_t fin = 0;
    std::uint64_t rst = 0;
    std::int64_t previous_first = 0;
    std::set<std::string> keys;
    for (const LifetimeFlow& flow : truth.flows) {
        SCOPED_TRACE(flow.key);
        ASSERT_TRUE(keys.insert(flow.key).second);
        const auto it = times.find(flow.key);
        ASSERT_NE(it, times.end());
        const PacketTimes& pcap = it->second;
        EXPECT_TRUE(std::is_sorted(pcap.times.begin(), pcap.times.end()));
        ASSERT_EQ(pcap.times.size(), flow.packets);
        EXPECT_EQ(scan.flows.at(flow.key).bytes, flow.bytes);
        EXPECT_EQ(pcap.times.front(), flow.first_ns);
        EXPECT_EQ(pcap.times.back(), flow.last_ns);
        EXPECT_EQ(flow.first_ns % 1000, 0);
        previous_first = std::max(previous_first, flow.first_ns);
        // The gap list is exactly the silences longer than gap_min_ns.
        std::vector<std::pair<std::int64_t, std::int64_t>> silences;
        bool pause_seen = flow.pause_ns == 0;
        for (std::size_t j = 1; j < pcap.times.size(); ++j) {
            const std::int64_t silence = pcap.times[j] - pcap.times[j - 1];
            if (silence > truth.gap_min_ns) silences.emplace_back(pcap.times[j - 1], pcap.times[j]);
            if (silence == flow.pause_ns) pause_seen = true;
        }
        EXPECT_EQ(silences, flow.gaps);
        EXPECT_TRUE(pause_seen) << flow.pause_ns;
        // FIN/RST on the last packet of the flows that say so, and nowhere else.
        if (flow.proto == 6) {
            ASSERT_EQ(pcap.tcp_flags.size(), flow.packets);
            for (std::size_t j = 0; j + 1 < pcap.tcp_flags.size(); ++j) {
                ASSERT_EQ(pcap.tcp_flags[j], 0x18) << j;
            }
            const std::uint8_t want = flow.end == FlowEndFlag::fin   ? 0x11
                                      : flow.end == FlowEndFlag::rst ? 0x14
                                                                     : 0x18;
            EXPECT_EQ(pcap.tcp_flags.back(), want);
            fin += flow.end == FlowEndFlag::fin ? 1U : 0U;
            rst += flow.end == FlowEndFlag::rst ? 1U : 0U;
        } else {
            EXPECT_EQ(flow.end, FlowEndFlag::none);
        }
    }
    EXPECT_EQ(times.size(), truth.flows.size());
    EXPECT_EQ(truth.comments.at("fin_flows"), std::to_string(fin));
    EXPECT_EQ(truth.comments.at("rst_flows"), std::to_string(rst));
    EXPECT_EQ(truth.comments.at("last_packet_ns"),
              std::to_string(static_cast<std::int64_t>(scan.last_time * 1e6 + 0.5) * 1000));
}

TEST(GenLifetimes, PausesStraddleTheIdleGapAndDrawsMatchTheirDistributions) {
    const LifetimeTruth truth = read_lifetime_truth(lifetime_pcap() + ".truth.tsv");
    const double gap = 0.5e9;
    std::uint64_t multi = 0;
    std::uint64_t paused = 0;
    std::uint64_t shorter = 0;
    std::uint64_t longer = 0;
    double pause_sum = 0;
    double duration_sum = 0;
    std::uint64_t unpaused = 0;
    std::uint64_t tcp = 0;
    std::uint64_t fin = 0;
    std::uint64_t rst = 0;
    std::int64_t first_min = INT64_MAX;
    std::int64_t first_max = 0;
    for (const LifetimeFlow& flow : truth.flows) {
        first_min = std::min(first_min, flow.first_ns);
        first_max = std::max(first_max, flow.first_ns);
        if (flow.proto == 6) {
            ++tcp;
            fin += flow.end == FlowEndFlag::fin ? 1U : 0U;
            rst += flow.end == FlowEndFlag::rst ? 1U : 0U;
        }
        if (flow.packets < 2) {
            EXPECT_EQ(flow.pause_ns, 0);
            EXPECT_EQ(flow.first_ns, flow.last_ns);
            continue;
        }
        ++multi;
        if (flow.pause_ns == 0) {
            // Last - first is the drawn duration, up to flooring both ends to us.
            duration_sum += static_cast<double>(flow.last_ns - flow.first_ns);
            ++unpaused;
            continue;
        }
        ++paused;
        pause_sum += static_cast<double>(flow.pause_ns);
        // Uniform in [0.5 G, 1.5 G], each end floored to microseconds.
        const auto pause = static_cast<double>(flow.pause_ns);
        EXPECT_GE(pause, 0.5 * gap - 1000);
        EXPECT_LE(pause, 1.5 * gap + 1000);
        (pause < gap ? shorter : longer) += 1;
    }
    EXPECT_EQ(truth.comments.at("paused_flows"), std::to_string(paused));
    // Both sides of a timeout equal to --idle-gap, in about equal numbers.
    EXPECT_GT(shorter, paused / 4);
    EXPECT_GT(longer, paused / 4);
    const auto share = [](std::uint64_t k, std::uint64_t n) {
        return static_cast<double>(k) / static_cast<double>(n);
    };
    expect_share(share(paused, multi), 0.3, static_cast<double>(multi), "paused share");
    expect_share(share(fin, tcp), 0.6, static_cast<double>(tcp), "FIN share of TCP flows");
    expect_share(share(rst, tcp), 0.1, static_cast<double>(tcp), "RST share of TCP flows");
    // Pause mean G, standard deviation G / sqrt(12).
    const auto np = static_cast<double>(paused);
    EXPECT_NEAR(pause_sum / np, gap, 4 * gap / std::sqrt(12 * np));
    // Durations exponential, mean 0.4 s = standard deviation. (Whether a flow
    // pauses is drawn independently of its duration.)
    const auto nm = static_cast<double>(unpaused);
    EXPECT_NEAR(duration_sum / nm, 0.4e9, 4 * 0.4e9 / std::sqrt(nm) + 2000);
    // Arrivals: Poisson at rate * flows / packets = 1000 flows/s: N - 1 exponential
    // gaps span (N - 1)/1000 s with standard deviation sqrt(N - 1)/1000.
    EXPECT_EQ(truth.comments.at("flow_rate"), "1000");
    const double n = static_cast<double>(truth.flows.size() - 1);
    EXPECT_NEAR(static_cast<double>(first_max - first_min) / 1e9, n / 1000,
                4 * std::sqrt(n) / 1000 + 1e-6);
}

/// The lifecycle definitions applied to every packet of the pcap.
std::vector<IntervalLifecycle> replay_lifecycle(const std::map<std::string, PacketTimes>& flows,
                                                const std::map<std::string, FlowEndFlag>& ends,
                                                const std::vector<std::int64_t>& b,
                                                std::int64_t t) {
    std::vector<IntervalLifecycle> out(b.size() - 1);
    const auto interval = [&](std::int64_t x) -> std::size_t {
        const auto upto = static_cast<std::size_t>(std::upper_bound(b.begin(), b.end(), x) -
                                                   b.begin());
        return upto == 0 ? out.size() : upto - 1;
    };
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].start_ns = b[i];
        out[i].end_ns = b[i + 1];
    }
    for (const auto& [key, flow] : flows) {
        const auto& p = flow.times;
        std::vector<bool> active(b.size(), false);
        for (std::size_t j = 0; j < p.size(); ++j) {
            const bool starts = j == 0 || p[j] - p[j - 1] > t;
            if (const std::size_t i = interval(p[j]); starts && i < out.size()) {
                ++out[i].new_flows;
                if (j > 0) ++out[i].returning_flows;
            }
            const bool last = j + 1 == p.size() || p[j + 1] - p[j] > t;
            if (const std::size_t i = interval(p[j] + t); last && i < out.size()) ++out[i].expired;
            // Boundaries B with p in [B - T, B): B in (p, p + T].
            for (auto it = std::upper_bound(b.begin(), b.end(), p[j]);
                 it != b.end() && *it <= p[j] + t; ++it) {
                active[static_cast<std::size_t>(it - b.begin())] = true;
            }
        }
        for (std::size_t k = 0; k < b.size(); ++k) {
            if (!active[k]) continue;
            if (k < out.size()) ++out[k].active_at_start;
            if (k > 0) ++out[k - 1].active_at_end;
        }
        if (const std::size_t i = interval(p.back());
            ends.at(key) != FlowEndFlag::none && i < out.size()) {
            ++out[i].ended;
        }
    }
    return out;
}

TEST(GenLifetimes, IntervalCountsFromTruthMatchAPacketLevelReplay) {
    const LifetimeTruth truth = read_lifetime_truth(lifetime_pcap() + ".truth.tsv");
    const auto times = scan_times(lifetime_pcap());
    std::map<std::string, FlowEndFlag> ends;
    for (const LifetimeFlow& flow : truth.flows) ends[flow.key] = flow.end;
    const std::int64_t start = 1'700'000'000'000'000'000;
    std::vector<std::int64_t> b;
    for (std::int64_t t = start; t <= start + 5'000'000'000; t += 250'000'000) b.push_back(t);
    std::uint64_t returning = 0;
    for (const std::int64_t timeout :
         {truth.gap_min_ns, std::int64_t{400'000'000}, std::int64_t{500'000'000},
          std::int64_t{600'000'000}, std::int64_t{2'000'000'000}}) {
        SCOPED_TRACE(timeout);
        const auto got = lifecycle_counts(truth, b, timeout);
        EXPECT_EQ(got, replay_lifecycle(times, ends, b, timeout));
        for (const auto& r : got) {
            EXPECT_EQ(r.active_at_end, r.active_at_start + r.new_flows - r.expired);
            if (timeout == 500'000'000) returning += r.returning_flows;
        }
    }
    // With T = --idle-gap, pauses longer than T make flows return as new.
    EXPECT_GT(returning, 0u);
    EXPECT_THROW(lifecycle_counts(truth, b, truth.gap_min_ns - 1), std::invalid_argument);
}

TEST(GenLifetimes, OptionsEnableTheModeValidateAndReproduce) {
    // Any lifetime option alone turns the mode on.
    const std::string out = tmp_path("life_opt.pcap");
    ASSERT_EQ(run_gen({"--packets", "500", "--flows", "50", "--fin-fraction", "1", "--out", out}),
              0);
    const LifetimeTruth truth = read_lifetime_truth(out + ".truth.tsv");
    for (const LifetimeFlow& flow : truth.flows) {
        EXPECT_EQ(flow.end, flow.proto == 6 ? FlowEndFlag::fin : FlowEndFlag::none);
    }
    // The recorded command reproduces the run byte for byte.
    const std::string command = truth.comments.at("command");
    const std::string prefix = "(output paths omitted): flowsketch gen ";
    ASSERT_TRUE(command.starts_with(prefix)) << command;
    std::vector<std::string> args;
    std::istringstream words(command.substr(prefix.size()));
    for (std::string w; words >> w;) args.push_back(w);
    args.insert(args.end(), {"--out", tmp_path("life_opt2.pcap")});
    ASSERT_EQ(run_gen(args), 0);
    EXPECT_TRUE(read_bytes(out) == read_bytes(tmp_path("life_opt2.pcap")));
    EXPECT_EQ(read_bytes(out + ".truth.tsv"), read_bytes(tmp_path("life_opt2.pcap.truth.tsv")));

    const std::vector<std::vector<std::string>> bad = {
        {"--lifetimes", "--packets", "10", "--flows", "20"},
        {"--lifetimes", "--packets", "4294967296"},
        {"--flow-rate", "10", "--rate", "100"},
        {"--flow-rate", "0"},
        {"--fin-fraction", "0.7", "--rst-fraction", "0.4"},
        {"--idle-gap", "0"},
        {"--idle-gap-fraction", "1.5"},
        {"--duration-mean", "-1"},
        {"--gap-min", "nan"},
    };
    for (auto a : bad) {
        a.insert(a.end(), {"--out", out});
        std::string joined;
        for (const auto& w : a) joined += w + " ";
        EXPECT_THROW(parse_gen(a), CLI::ParseError) << joined;
    }
}

// ---------------------------------------------------------------- SYN flood

namespace capture = flowsketch::capture;
using flowsketch::gen::SynFlood;

/// One frame as the project's own reader and decoder (capture/) see it.
struct ReadFrame {
    std::int64_t time_ns = 0;
    std::uint32_t wire = 0;
    std::string key;  // "proto\tsrc\tdst\tsport\tdport", as in the truth
    std::uint8_t tcp_flags = 0;
    std::string bytes;  // the captured bytes
    friend bool operator==(const ReadFrame&, const ReadFrame&) = default;
};

std::string truth_key(const flowsketch::core::FlowKey& key) {
    return std::to_string(key.protocol) + "\t" + flowsketch::core::format_address(key, true) +
           "\t" + flowsketch::core::format_address(key, false) + "\t" +
           std::to_string(key.src_port) + "\t" + std::to_string(key.dst_port);
}

std::vector<ReadFrame> read_frames(const std::string& path) {
    std::vector<ReadFrame> frames;
    capture::PcapFileSource source(path, "");
    capture::Frame frame;
    for (;;) {
        const capture::ReadStatus status = source.next(frame);
        if (status == capture::ReadStatus::end_of_file) break;
        if (status != capture::ReadStatus::frame) {
            ADD_FAILURE() << source.damage_message();
            break;
        }
        capture::DecodedPacket packet;
        const capture::SkipReason skip =
            capture::decode_frame(source.link_type(), frame.data, frame.captured_length, packet);
        EXPECT_EQ(skip, capture::SkipReason::none) << capture::skip_reason_name(skip);
        frames.push_back(
            {frame.timestamp_ns, frame.wire_length, truth_key(packet.key), packet.tcp_flags,
             std::string(reinterpret_cast<const char*>(frame.data), frame.captured_length)});
    }
    return frames;
}

const std::string victim = "198.51.100.80";

bool is_flood_key(const std::string& key) {
    // proto 6, dst the victim, dport 80 (no background address is in 198.51.100.0/24).
    return key.starts_with("6\t") && key.find("\t" + victim + "\t") != std::string::npos &&
           key.ends_with("\t80");
}

/// The truth's sort key of a line: packets descending, proto, family (IPv4
/// first), src, dst (numeric), sport, dport.
auto truth_rank(const std::string& key, std::uint64_t packets) {
    std::vector<std::string> f;
    std::istringstream fields(key);
    for (std::string col; std::getline(fields, col, '\t');) f.push_back(col);
    const auto address = [](const std::string& text) {
        std::array<std::uint8_t, 16> bytes{};
        const bool v6 = text.find(':') != std::string::npos;
        EXPECT_EQ(inet_pton(v6 ? AF_INET6 : AF_INET, text.c_str(), bytes.data()), 1) << text;
        return std::make_pair(v6, bytes);
    };
    const auto [v6, src] = address(f.at(1));
    const auto [dst_v6, dst] = address(f.at(2));
    return std::make_tuple(~packets, std::stoi(f.at(0)), v6, src, dst, std::stoi(f.at(3)),
                           std::stoi(f.at(4)));
}

const std::vector<std::string> flood_background = {
    "--packets", "1000", "--flows", "100", "--ipv6", "0.3", "--vlan", "0.2", "--seed", "7"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

TEST(GenSynFlood, AddsExactlyTheFloodFlowsAndLeavesTheBackgroundAlone) {
    const std::string plain = tmp_path("flood_plain.pcap");
    const std::string flooded = tmp_path("flood.pcap");
    ASSERT_EQ(run_gen(with(flood_background, {"--out", plain})), 0);
    ASSERT_EQ(run_gen(with(flood_background, {"--syn-flood", "5000", "--out", flooded})), 0);
    const std::vector<ReadFrame> background = read_frames(plain);
    const std::vector<ReadFrame> frames = read_frames(flooded);
    ASSERT_EQ(background.size(), 1000u);
    ASSERT_EQ(frames.size(), 1000u + 5000u);

    std::vector<ReadFrame> rest;
    std::map<std::string, FlowCounts> per_flow;
    std::set<std::string> flood_keys;
    std::vector<std::int64_t> flood_times;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const ReadFrame& f = frames[i];
        SCOPED_TRACE(f.key);
        if (i > 0) {
            ASSERT_GE(f.time_ns, frames[i - 1].time_ns) << i;  // non-decreasing
        }
        FlowCounts& counts = per_flow[f.key];
        ++counts.packets;
        counts.bytes += f.wire;
        if (!is_flood_key(f.key)) {
            rest.push_back(f);
            continue;
        }
        // A bare SYN: 60-byte Ethernet/IPv4/TCP frame, IPv4 total length 40,
        // ACK number 0, valid checksums, 6 bytes of zero padding.
        EXPECT_TRUE(flood_keys.insert(f.key).second);
        flood_times.push_back(f.time_ns);
        EXPECT_EQ(f.tcp_flags, 0x02);
        ASSERT_EQ(f.wire, 60u);
        ASSERT_EQ(f.bytes.size(), 60u);
        const auto* p = reinterpret_cast<const std::uint8_t*>(f.bytes.data());
        EXPECT_EQ(be16(p + 12), 0x0800);
        EXPECT_EQ(be16(p + 16), 40);
        EXPECT_EQ(fold(sum16(p + 14, 20)), 0xffff);
        EXPECT_EQ(fold(sum16(p + 26, 8) + 6 + 20 + sum16(p + 34, 20)), 0xffff);
        EXPECT_EQ(be16(p + 42) | be16(p + 44), 0);  // ack number
        EXPECT_EQ(std::string(f.bytes, 54), std::string(6, '\0'));
        // Plausible spoofed sources: unicast, not loopback or 0/8, not the victim's /24.
        EXPECT_GE(be16(p + 34), 1024);
        EXPECT_NE(p[26], 0);
        EXPECT_NE(p[26], 127);
        EXPECT_LT(p[26], 224);
        EXPECT_FALSE(p[26] == 198 && p[27] == 51 && p[28] == 100);
    }
    EXPECT_EQ(flood_keys.size(), 5000u);
    EXPECT_EQ(flood_times.size(), 5000u);
    // Without the flood packets, the pcap is the run without --syn-flood, frame for frame.
    EXPECT_TRUE(rest == background);
    // The flood is spread uniformly over the background's span: each position
    // (t - first) / span is uniform in [0, 1], mean 1/2, sd 1/sqrt(12 n).
    const auto first = static_cast<double>(background.front().time_ns);
    const auto span = static_cast<double>(background.back().time_ns) - first;
    double sum = 0;
    for (const std::int64_t t : flood_times) {
        EXPECT_GE(static_cast<double>(t), first);
        EXPECT_LE(static_cast<double>(t), first + span);
        sum += (static_cast<double>(t) - first) / span;
    }
    EXPECT_NEAR(sum / 5000, 0.5, 4 / std::sqrt(12.0 * 5000));

    // Truth: exactly the flows in the pcap; the flood ones are 1 packet of 60
    // bytes; the others are the truth of the run without the flood.
    const Truth truth = read_truth(flooded + ".truth.tsv");
    const Truth plain_truth = read_truth(plain + ".truth.tsv");
    EXPECT_TRUE(truth.flows == per_flow);
    std::map<std::string, FlowCounts> truth_background;
    std::uint64_t truth_flood = 0;
    for (const auto& [key, counts] : truth.flows) {
        if (is_flood_key(key)) {
            ++truth_flood;
            EXPECT_EQ(counts, (FlowCounts{1, 60})) << key;
            EXPECT_EQ(flood_keys.count(key), 1u) << key;
        } else {
            truth_background.emplace(key, counts);
        }
    }
    EXPECT_EQ(truth_flood, 5000u);
    EXPECT_TRUE(truth_background == plain_truth.flows);
    EXPECT_EQ(truth.comments.at("frames"), "6000");
    EXPECT_EQ(truth.comments.at("ip_packets"), "6000");
    EXPECT_EQ(truth.comments.at("background_packets"), "1000");
    EXPECT_EQ(truth.comments.at("syn_flood_flows"), "5000");
    EXPECT_EQ(truth.comments.at("syn_flood_victim"), victim + ":80");
    EXPECT_EQ(truth.comments.at("flows"), std::to_string(plain_truth.flows.size() + 5000));
    EXPECT_EQ(truth.comments.at("configured_flows"), "100");
    EXPECT_EQ(truth.comments.at("ip_bytes"),
              std::to_string(std::stoull(plain_truth.comments.at("ip_bytes")) + 5000 * 60));
    EXPECT_EQ(plain_truth.comments.count("syn_flood_flows"), 0u);
    // Lines in the documented order, flood flows among the other 1-packet flows.
    for (std::size_t i = 1; i < truth.keys.size(); ++i) {
        const std::string& a = truth.keys[i - 1];
        const std::string& b = truth.keys[i];
        ASSERT_LT(truth_rank(a, truth.flows.at(a).packets),
                  truth_rank(b, truth.flows.at(b).packets))
            << a << " before " << b;
    }
}

TEST(GenSynFlood, DeterministicReproducibleAndAbsentWhenZero) {
    const auto run = [](const std::string& name, const std::vector<std::string>& more,
                        const std::string& seed = "7") {
        auto args = with(flood_background, with(more, {"--out", tmp_path(name)}));
        args.at(9) = seed;  // flood_background ends with --seed 7
        EXPECT_EQ(run_gen(args), 0);
        return std::make_pair(read_bytes(tmp_path(name)),
                              read_bytes(tmp_path(name) + ".truth.tsv"));
    };
    const auto a = run("det_a.pcap", {"--syn-flood", "3000"});
    const auto b = run("det_b.pcap", {"--syn-flood", "3000"});
    EXPECT_TRUE(a.first == b.first);
    EXPECT_TRUE(a.second == b.second);
    // Another seed: other sources, other times (and other background).
    const auto c = run("det_c.pcap", {"--syn-flood", "3000"}, "8");
    EXPECT_NE(a.first, c.first);
    std::set<std::string> keys_a;
    for (const auto& [key, counts] : read_truth(tmp_path("det_a.pcap.truth.tsv")).flows) {
        if (is_flood_key(key)) keys_a.insert(key);
    }
    std::size_t shared = 0;
    for (const auto& [key, counts] : read_truth(tmp_path("det_c.pcap.truth.tsv")).flows) {
        shared += keys_a.count(key);
    }
    EXPECT_EQ(shared, 0u);

    // --syn-flood 0 is no flood: the same bytes as without the option.
    const auto none = run("det_none.pcap", {});
    const auto zero = run("det_zero.pcap", {"--syn-flood", "0"});
    EXPECT_TRUE(none.first == zero.first);
    EXPECT_TRUE(none.second == zero.second);
    EXPECT_EQ(none.second.find("syn"), std::string::npos);

    // The recorded command (with --syn-flood) reproduces the run byte for byte.
    const std::string command = read_truth(tmp_path("det_a.pcap.truth.tsv")).comments.at("command");
    const std::string prefix = "(output paths omitted): flowsketch gen ";
    ASSERT_TRUE(command.starts_with(prefix)) << command;
    EXPECT_NE(command.find(" --syn-flood 3000"), std::string::npos) << command;
    std::vector<std::string> args;
    std::istringstream words(command.substr(prefix.size()));
    for (std::string w; words >> w;) args.push_back(w);
    args.insert(args.end(), {"--out", tmp_path("det_repro.pcap")});
    ASSERT_EQ(run_gen(args), 0);
    EXPECT_TRUE(read_bytes(tmp_path("det_repro.pcap")) == a.first);
    EXPECT_TRUE(read_bytes(tmp_path("det_repro.pcap.truth.tsv")) == a.second);
}

TEST(GenSynFlood, WorksWithLifetimes) {
    const std::vector<std::string> life = {
        "--lifetimes", "--packets",  "6000", "--flows", "300", "--rate", "20000", "--duration-mean",
        "0.1",         "--idle-gap", "0.05", "--tcp",   "0.7", "--seed", "5"};
    const std::string plain = tmp_path("flood_life_plain.pcap");
    const std::string flooded = tmp_path("flood_life.pcap");
    ASSERT_EQ(run_gen(with(life, {"--out", plain})), 0);
    ASSERT_EQ(run_gen(with(life, {"--syn-flood", "3000", "--out", flooded})), 0);
    const LifetimeTruth plain_truth = read_lifetime_truth(plain + ".truth.tsv");
    const LifetimeTruth truth = read_lifetime_truth(flooded + ".truth.tsv");
    const std::vector<ReadFrame> frames = read_frames(flooded);
    ASSERT_EQ(frames.size(), 9000u);
    std::map<std::string, std::vector<std::int64_t>> times;
    std::vector<ReadFrame> rest;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (i > 0) {
            ASSERT_GE(frames[i].time_ns, frames[i - 1].time_ns) << i;
        }
        times[frames[i].key].push_back(frames[i].time_ns);
        if (!is_flood_key(frames[i].key)) rest.push_back(frames[i]);
    }
    EXPECT_TRUE(rest == read_frames(plain));

    EXPECT_EQ(truth.comments.at("frames"), "9000");
    EXPECT_EQ(truth.comments.at("flows"), "3300");
    EXPECT_EQ(truth.comments.at("syn_flood_flows"), "3000");
    // The flood spans the background: the run's first and last packets are the background's.
    EXPECT_EQ(truth.comments.at("first_packet_ns"), plain_truth.comments.at("first_packet_ns"));
    EXPECT_EQ(truth.comments.at("last_packet_ns"), plain_truth.comments.at("last_packet_ns"));
    for (const char* same : {"paused_flows", "fin_flows", "rst_flows", "gap_min_ns"}) {
        EXPECT_EQ(truth.comments.at(same), plain_truth.comments.at(same)) << same;
    }
    std::map<std::string, const LifetimeFlow*> background;
    for (const LifetimeFlow& flow : plain_truth.flows) background[flow.key] = &flow;
    std::size_t flood = 0;
    std::size_t matched = 0;
    for (const LifetimeFlow& flow : truth.flows) {
        SCOPED_TRACE(flow.key);
        const auto& t = times.at(flow.key);
        ASSERT_EQ(t.size(), flow.packets);
        EXPECT_EQ(t.front(), flow.first_ns);
        EXPECT_EQ(t.back(), flow.last_ns);
        if (is_flood_key(flow.key)) {
            ++flood;
            EXPECT_EQ(flow.packets, 1u);
            EXPECT_EQ(flow.bytes, 60u);
            EXPECT_EQ(flow.end, FlowEndFlag::none);
            EXPECT_EQ(flow.pause_ns, 0);
            EXPECT_TRUE(flow.gaps.empty());
            continue;
        }
        const LifetimeFlow& b = *background.at(flow.key);
        ++matched;
        EXPECT_EQ(flow.packets, b.packets);
        EXPECT_EQ(flow.bytes, b.bytes);
        EXPECT_EQ(flow.first_ns, b.first_ns);
        EXPECT_EQ(flow.last_ns, b.last_ns);
        EXPECT_EQ(flow.end, b.end);
        EXPECT_EQ(flow.pause_ns, b.pause_ns);
        EXPECT_EQ(flow.gaps, b.gaps);
    }
    EXPECT_EQ(flood, 3000u);
    EXPECT_EQ(matched, plain_truth.flows.size());
    EXPECT_EQ(times.size(), truth.flows.size());

    // Lifecycle counts see every flood flow as one new flow: with a timeout
    // longer than any silence each flow is one session.
    const std::int64_t start = 1'700'000'000'000'000'000;
    std::vector<std::int64_t> b;
    for (std::int64_t t = start; t <= frames.back().time_ns + 250'000'000; t += 250'000'000) {
        b.push_back(t);
    }
    std::uint64_t new_flows = 0;
    for (const auto& r : lifecycle_counts(truth, b, 100'000'000'000)) {
        EXPECT_EQ(r.active_at_end, r.active_at_start + r.new_flows - r.expired);
        new_flows += r.new_flows;
    }
    EXPECT_EQ(new_flows, 3300u);
}

TEST(GenSynFlood, SourcesAreDistinctAndTimesUniformAtScale) {
    flowsketch::gen::GenConfig config;
    config.syn_flood = 1'000'000;
    config.seed = 3;
    const std::uint64_t span = 60'000'000;
    SynFlood flood(config, span);
    std::vector<std::uint64_t> sources;
    sources.reserve(config.syn_flood);
    std::array<std::uint8_t, SynFlood::frame_size> frame{};
    std::uint64_t previous = 0;
    double sum = 0;
    while (!flood.done()) {
        const std::uint64_t announced = flood.next_time_us();
        const SynFlood::Packet p = flood.next(frame);
        ASSERT_EQ(p.time_us, announced);
        ASSERT_GE(p.time_us, previous);
        ASSERT_LE(p.time_us, span);
        ASSERT_TRUE(SynFlood::usable_source(p.source));
        ASSERT_EQ(frame[47], 0x02);  // SYN
        previous = p.time_us;
        sum += static_cast<double>(p.time_us) / static_cast<double>(span);
        sources.push_back(p.source);
    }
    ASSERT_EQ(sources.size(), config.syn_flood);
    std::sort(sources.begin(), sources.end());
    EXPECT_EQ(std::adjacent_find(sources.begin(), sources.end()), sources.end());
    const auto n = static_cast<double>(config.syn_flood);
    EXPECT_NEAR(sum / n, 0.5, 4 / std::sqrt(12 * n));
    // Sources spread over the address space: the share in 128.0.0.0/1 is about
    // (224 - 128) / (224 - 2 - 1/256) of usable addresses.
    const auto upper = static_cast<double>(
        std::count_if(sources.begin(), sources.end(), [](std::uint64_t s) { return s >> 47; }));
    expect_share(upper / n, 96.0 / (222.0 - 1.0 / 256), n, "sources in 128.0.0.0/1");
}

TEST(GenSynFlood, RejectsBadValues) {
    const std::string out = tmp_path("flood_invalid.pcap");
    for (const char* bad : {"-1", "abc", "1.5", "", "1e3", "50000001", "99999999999999999999"}) {
        EXPECT_THROW(parse_gen({"--syn-flood", bad, "--out", out}), CLI::ParseError) << bad;
    }
    EXPECT_NO_THROW(parse_gen({"--syn-flood", "0", "--out", out}));
    EXPECT_NO_THROW(parse_gen({"--syn-flood", "50000000", "--out", out}));
    EXPECT_NO_THROW(parse_gen({"--syn-flood", "10", "--lifetimes", "--out", out}));
}

}  // namespace
