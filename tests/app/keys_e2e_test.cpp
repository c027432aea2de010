// Aggregation keys on real attack captures: the victim of a DNS reflection
// attack is first by destination, a scanning host first by source, each with
// its count inside its bounds; the counts to check against come from a plain
// walk of the capture written here, independent of flowsketch's decoder.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/capture_builder.hpp"
#include "tests/support/json_reports.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

std::string dotted(const unsigned char* address) {
    return std::to_string(address[0]) + "." + std::to_string(address[1]) + "." + std::to_string(address[2]) + "." +
           std::to_string(address[3]);
}

// Per IPv4 source or destination address (dotted quad) of an Ethernet pcap,
// counting 802.1Q-tagged frames too: its packets, and its distinct peers
// (the addresses at the other end).
struct AddressCounts {
    std::map<std::string, std::uint64_t> packets;
    std::map<std::string, std::set<std::string>> peers;
};

AddressCounts ipv4_counts_by(const std::string& path, bool source) {
    std::ifstream in(path, std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    AddressCounts counts;
    std::size_t at = 24;  // little-endian microsecond pcap, checked by the caller's file choice
    while (at + 16 <= bytes.size()) {
        const auto byte = [&](std::size_t i) { return std::uint32_t{bytes[at + i]}; };
        const std::uint32_t captured = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
        const unsigned char* frame = bytes.data() + at + 16;
        at += 16 + captured;
        if (at > bytes.size() || captured < 34) continue;
        std::size_t ip = 14;
        unsigned type = unsigned{frame[12]} << 8 | frame[13];
        if (type == 0x8100 && captured >= 38) {
            type = unsigned{frame[16]} << 8 | frame[17];
            ip = 18;
        }
        if (type != 0x0800 || captured < ip + 20) continue;
        const std::string address = dotted(frame + ip + (source ? 12 : 16));
        ++counts.packets[address];
        counts.peers[address].insert(dotted(frame + ip + (source ? 16 : 12)));
    }
    return counts;
}

std::map<std::string, std::uint64_t> ipv4_packets_by(const std::string& path, bool source) {
    return ipv4_counts_by(path, source).packets;
}

std::pair<std::string, std::uint64_t> heaviest(const std::map<std::string, std::uint64_t>& counts) {
    std::pair<std::string, std::uint64_t> best;
    for (const auto& entry : counts) {
        if (entry.second > best.second) best = entry;
    }
    return best;
}

TEST(KeysEndToEnd, ReflectionVictimIsFirstByDestination) {
    const std::string path = pcap_path("attacks/netlyzer-ddos.pcap");
    const auto [victim, truth] = heaviest(ipv4_packets_by(path, false));
    ASSERT_EQ(victim, "227.213.154.241");  // as the capture's SOURCES row says
    const nlohmann::json report = single_json_report("-r " + path + " --key dst --key src/24 --key dport");
    const nlohmann::json& by_dst = key_entry(report, "dst");
    const nlohmann::json& first = by_dst.at("top_packets").at(0);
    EXPECT_EQ(first.at("dst"), victim);
    EXPECT_EQ(first.size(), 4u) << "only dst, estimate, lower, shares_cells: " << first.dump();
    EXPECT_LE(first.at("lower").get<std::uint64_t>(), truth);
    EXPECT_GE(first.at("estimate").get<std::uint64_t>(), truth);
    EXPECT_GT(by_dst.at("memory_bytes").get<std::uint64_t>(), 0u);
    // A prefix key prints its network; the 5-tuple lists stay where they were.
    const std::string network = key_entry(report, "src/24,64").at("top_packets").at(0).at("src");
    EXPECT_EQ(network.substr(network.size() - 5), ".0/24") << network;
    EXPECT_EQ(report.at("top_packets").at(0).size(), 8u);
}

TEST(KeysEndToEnd, ScanningHostIsFirstBySource) {
    const std::string path = pcap_path("attacks/slips-test7-malicious.pcap");
    const auto [scanner, truth] = heaviest(ipv4_packets_by(path, true));
    ASSERT_EQ(scanner, "192.168.2.16");
    const nlohmann::json report = single_json_report("-r " + path + " --key src");
    const nlohmann::json& first = key_entry(report, "src").at("top_packets").at(0);
    EXPECT_EQ(first.at("src"), scanner);
    EXPECT_LE(first.at("lower").get<std::uint64_t>(), truth);
    EXPECT_GE(first.at("estimate").get<std::uint64_t>(), truth);
}

TEST(KeysEndToEnd, TextCsvAndKeyOrderFollowTheCommandLine) {
    const std::string path = pcap_path("attacks/netlyzer-ddos.pcap");
    const RunResult text = run_flowsketch("-r " + path + " --interval 0 --key dport --key dst");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const std::size_t dport = text.out.find("Top dport by packets");
    const std::size_t dst = text.out.find("Top dst by packets");
    ASSERT_NE(dport, std::string::npos) << text.out;
    ASSERT_NE(dst, std::string::npos) << text.out;
    EXPECT_LT(dport, dst);
    const RunResult csv =
        run_flowsketch("-r " + path + " --interval 0 --top 2 --key dst/24 --format csv --probe test");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    const std::vector<std::string> rows = csv_heavy_hitter_lines(csv.out);
    // The header, the 5-tuple's two lists of two, the key's two lists of one
    // (every destination of the capture lies in one /24).
    ASSERT_EQ(rows.size(), 1u + 4u + 2u);
    EXPECT_NE(rows[0].find(",key,"), std::string::npos) << rows[0];
    const std::string probe_and_seed = ",test,0x666c6f77736b7463";
    const std::string suffix = probe_and_seed + ",,,,,";  // no metric, value, VLAN, VNI or tunnel in these rows
    EXPECT_EQ(rows[1].substr(rows[1].size() - 10 - suffix.size()), ",5tuple,,," + suffix);  // no distinct count
    EXPECT_NE(rows[5].find(",227.213.154.0/24,"), std::string::npos) << rows[5];
    EXPECT_EQ(rows[5].substr(rows[5].size() - 15 - suffix.size()), ",\"dst/24,64\",,," + suffix);
}

TEST(KeysEndToEnd, ASpecGivenTwiceOrTheDefaultOnce) {
    const std::string path = pcap_path("attacks/netlyzer-ddos.pcap");
    const nlohmann::json report = single_json_report("-r " + path + " --key 5tuple --key dst");
    EXPECT_EQ(report.at("keys").size(), 1u);
    const RunResult twice = run_flowsketch("-r " + path + " --key dst --key dst/32,128");
    EXPECT_EQ(twice.exit_code, 2);
    EXPECT_EQ(lines_of(twice.err).size(), 1u) << twice.err;
    EXPECT_NE(twice.err.find("given twice"), std::string::npos) << twice.err;
}

// Interval reports carry what changed since the previous interval, for the
// 5-tuple and every key; the first interval and the final report do not.
TEST(KeysEndToEnd, IntervalReportsSayWhatChanged) {
    const RunResult run = run_flowsketch("-r " + pcap_path("attacks/netlyzer-ddos.pcap") +
                                         " --key dst --interval 0.25 --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<std::string> lines = lines_of(run.out);
    ASSERT_GE(lines.size(), 4u);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const nlohmann::json report = nlohmann::json::parse(lines[i]);
        const bool interval = report.at("kind") == "interval";
        EXPECT_EQ(report.contains("changes"), interval) << i;
        EXPECT_EQ(report.at("keys").at(0).contains("changes_bytes"), interval) << i;
        if (interval && i == 0) {
            EXPECT_TRUE(report.at("changes").empty());
        }
        if (!interval || i == 0) continue;
        for (const auto& change : report.at("keys").at(0).at("changes")) {
            EXPECT_EQ(change.at("dst"), "227.213.154.241");  // the only destination
            EXPECT_EQ(change.at("change").get<std::int64_t>(),
                      change.at("current").get<std::int64_t>() - change.at("previous").get<std::int64_t>());
            EXPECT_GE(change.at("bound").get<double>(), 0.0);
            EXPECT_EQ(change.size(), 5u) << change.dump();
        }
    }
}

TEST(KeysEndToEnd, BadSpecsEndWithOneLineNamingThem) {
    for (const std::string spec : {"dst/33", "foo", "dst/24,129", "src/"}) {
        const RunResult run = run_flowsketch("-r " + pcap_path("attacks/netlyzer-ddos.pcap") + " --key " + spec);
        EXPECT_EQ(run.exit_code, 2) << spec;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find("'" + spec + "'"), std::string::npos) << run.err;
        EXPECT_EQ(run.out, "");
    }
}

// The victim of the reflection attack has the most distinct sources, and its
// true number of resolvers lies inside the reported bounds.
TEST(KeysEndToEnd, ReflectionVictimHasTheMostDistinctSources) {
    const std::string path = pcap_path("attacks/netlyzer-ddos.pcap");
    const AddressCounts truth = ipv4_counts_by(path, false);
    const std::string victim = "227.213.154.241";
    const auto sources = static_cast<double>(truth.peers.at(victim).size());
    ASSERT_GT(sources, 3000);
    const nlohmann::json report = single_json_report("-r " + path + " --key dst:distinct=src");
    const nlohmann::json& key = key_entry(report, "dst:distinct=src");
    const nlohmann::json& first = key.at("top_distinct").at(0);
    EXPECT_EQ(first.at("dst"), victim);
    EXPECT_LE(first.at("distinct_lower").get<double>(), sources) << first.dump();
    EXPECT_GE(first.at("distinct_upper").get<double>(), sources) << first.dump();
    EXPECT_LE(first.at("distinct_lower").get<double>(), first.at("distinct").get<double>());
    // The packet lists carry each key's distinct count too.
    EXPECT_TRUE(key.at("top_packets").at(0).contains("distinct"));
    EXPECT_TRUE(key.contains("distinct_pairs"));
    // The run's distinct sources and destinations, with their bounds.
    std::set<std::string> all_sources;
    for (const auto& entry : truth.peers) all_sources.insert(entry.second.begin(), entry.second.end());
    const nlohmann::json& distinct = report.at("distinct");
    EXPECT_LE(distinct.at("sources").at("lower").get<double>(), static_cast<double>(all_sources.size()));
    EXPECT_GE(distinct.at("sources").at("upper").get<double>(), static_cast<double>(all_sources.size()));
    EXPECT_LE(distinct.at("destinations").at("lower").get<double>(), static_cast<double>(truth.peers.size()));
    EXPECT_GE(distinct.at("destinations").at("upper").get<double>(), static_cast<double>(truth.peers.size()));
}

TEST(KeysEndToEnd, ScannerHasTheMostDistinctDestinations) {
    const std::string path = pcap_path("attacks/slips-test7-malicious.pcap");
    const AddressCounts truth = ipv4_counts_by(path, true);
    const std::string scanner = "192.168.2.16";
    const auto destinations = static_cast<double>(truth.peers.at(scanner).size());
    const nlohmann::json report = single_json_report("-r " + path + " --key src:distinct=dst");
    const nlohmann::json& first = key_entry(report, "src:distinct=dst").at("top_distinct").at(0);
    EXPECT_EQ(first.at("src"), scanner);
    EXPECT_LE(first.at("distinct_lower").get<double>(), destinations) << first.dump();
    EXPECT_GE(first.at("distinct_upper").get<double>(), destinations) << first.dump();
}

// A distinct count is in every output: text, CSV and Prometheus-free formats
// alike; a spec that counts a field its key keeps whole is refused.
TEST(KeysEndToEnd, DistinctCountsInTextAndCsv) {
    const std::string path = pcap_path("attacks/netlyzer-ddos.pcap");
    const RunResult text = run_flowsketch("-r " + path + " --interval 0 --key dst:distinct=src");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Top dst:distinct=src by distinct src"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Distinct (with bounds)"), std::string::npos) << text.out;
    const RunResult csv = run_flowsketch("-r " + path + " --interval 0 --top 1 --key dst:distinct=src --format csv");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    const std::vector<std::string> rows = csv_heavy_hitter_lines(csv.out);
    ASSERT_EQ(rows.size(), 1u + 2u + 3u);
    EXPECT_EQ(rows[5].rfind("final,", 0), 0u);
    EXPECT_NE(rows[5].find(",distinct,1,"), std::string::npos) << rows[5];
    for (const std::string spec : {"dst:distinct=dst", "5tuple:distinct=src", "dst:distinct=foo"}) {
        const RunResult run = run_flowsketch("-r " + path + " --key " + spec);
        EXPECT_EQ(run.exit_code, 2) << spec;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find("'" + spec + "'"), std::string::npos) << run.err;
    }
}

// Steady traffic to two hosts for three seconds, then a new destination
// starts sending 200 packets a second: the change is the first one listed in
// the interval it starts, by the key that sees it (dst) and by the 5-tuple.
TEST(KeysEndToEnd, TrafficThatStartsMidRunIsTheFirstChange) {
    using namespace flowsketch::testing;
    PcapWriter pcap;
    Ipv4Fields steady_a{5, {}, 0x0a000001, 0xc6336401};
    Ipv4Fields steady_b{5, {}, 0x0a000002, 0xc6336402};
    Ipv4Fields burst{5, {}, 0x0a000003, 0xc6336409};
    for (std::uint32_t ms = 0; ms < 5000; ms += 10) {
        const std::uint32_t s = ms / 1000;
        const std::uint32_t us = (ms % 1000) * 1000;
        pcap.record(s, us, ethernet(0x0800, ipv4(17, udp(1000, 53), steady_a)));
        pcap.record(s, us + 1, ethernet(0x0800, ipv4(17, udp(1001, 53), steady_b)));
        if (ms >= 3000) {
            pcap.record(s, us + 2, ethernet(0x0800, ipv4(17, udp(2000, 443), burst)));
            pcap.record(s, us + 3, ethernet(0x0800, ipv4(17, udp(2001, 443), burst)));
        }
    }
    const std::string path = tmp_path("mid-run-start.pcap");
    write_bytes(path, pcap.bytes());
    const RunResult run = run_flowsketch("-r " + path + " --key dst --interval 1 --format json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<std::string> lines = lines_of(run.out);
    ASSERT_EQ(lines.size(), 6u);  // five intervals and the final report
    for (std::size_t i = 1; i < 5; ++i) {
        const nlohmann::json report = nlohmann::json::parse(lines[i]);
        const nlohmann::json& changes = report.at("keys").at(0).at("changes");
        if (i != 3) {
            // Steady seconds: nothing moved by more than the bound allows.
            for (const auto& change : changes) {
                EXPECT_LE(std::abs(change.at("change").get<double>()), change.at("bound").get<double>()) << lines[i];
            }
            continue;
        }
        ASSERT_FALSE(changes.empty()) << lines[i];
        EXPECT_EQ(changes.at(0).at("dst"), "198.51.100.9");
        EXPECT_EQ(changes.at(0).at("previous"), 0);
        EXPECT_EQ(changes.at(0).at("current"), 200);
        EXPECT_EQ(report.at("changes").at(0).at("dport"), 443);
        EXPECT_EQ(report.at("changes").at(0).at("previous"), 0);
    }
}

// --max-memory counts every key spec's state, distinct counts included, and
// the refusal names them.
TEST(KeysEndToEnd, MaxMemoryCountsEveryKey) {
    const std::string input = "-r " + pcap_path("attacks/netlyzer-ddos.pcap") + " --no-flows ";
    EXPECT_EQ(run_flowsketch(input + "--key dst --max-memory 8MiB").exit_code, 0);
    const RunResult keys = run_flowsketch(input + "--key dst --key src --key src/24 --max-memory 8MiB");
    EXPECT_EQ(keys.exit_code, 2);
    EXPECT_NE(keys.err.find("the Count-Min sketches of 4 key specs"), std::string::npos) << keys.err;
    const RunResult distinct = run_flowsketch(input + "--key dst:distinct=src --max-memory 8MiB");
    EXPECT_EQ(distinct.exit_code, 2);
    EXPECT_EQ(lines_of(distinct.err).size(), 1u) << distinct.err;
    EXPECT_NE(distinct.err.find("the distinct counts ("), std::string::npos) << distinct.err;
}

}  // namespace
}  // namespace flowsketch::testing
