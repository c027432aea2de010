// The `tunnel` key spec and `+vni` end to end: on the tunnelled sample
// captures, the outer endpoints and tunnel ids with the counts tshark gives
// (pcaps/tunnels/*.tunnel.truth.tsv, scripts/tshark_truth.py --tunnel-key);
// on a generated capture of two tenants with the same inner addresses, `+vni`
// keeps them apart and a plain key merges them; bad combinations refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/json_reports.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

// (type, outer src, outer dst, tunnel id) -> (packets, bytes)
using TunnelTruth = std::map<std::tuple<std::string, std::string, std::string, std::uint32_t>,
                             std::pair<std::uint64_t, std::uint64_t>>;

TunnelTruth read_tunnel_truth(const std::string& capture, std::uint64_t& tunnelled) {
    std::ifstream in(pcap_path("tunnels/" + capture + ".tunnel.truth.tsv"));
    EXPECT_TRUE(in) << capture;
    TunnelTruth truth;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# tunnelled ", 0) == 0) tunnelled = std::stoull(line.substr(12));
        if (line.empty() || line[0] == '#' || line.rfind("type", 0) == 0) continue;
        std::istringstream fields(line);
        std::string type, src, dst;
        std::uint32_t vni = 0;
        std::uint64_t packets = 0, bytes = 0;
        fields >> type >> src >> dst >> vni >> packets >> bytes;
        truth[{type, src, dst, vni}] = {packets, bytes};
    }
    return truth;
}

// Sums a truth over the tunnel ids: the `tunnel` key's truth.
TunnelTruth without_ids(const TunnelTruth& truth) {
    TunnelTruth merged;
    for (const auto& [key, counts] : truth) {
        auto& [packets, bytes] = merged[{std::get<0>(key), std::get<1>(key), std::get<2>(key), 0}];
        packets += counts.first;
        bytes += counts.second;
    }
    return merged;
}

// Every key of the list is in the truth with its exact count (a few keys in a
// sketch of 11,299 columns: no collisions), and the list has every truth key.
void expect_list_matches(const json& list, const TunnelTruth& truth, bool by_packets, bool with_ids) {
    ASSERT_EQ(list.size(), truth.size()) << list.dump();
    for (const auto& entry : list) {
        const std::uint32_t vni = with_ids ? entry.at("vni").get<std::uint32_t>() : 0;
        EXPECT_EQ(entry.contains("vni"), with_ids) << entry.dump();
        const auto it = truth.find({entry.at("tunnel").get<std::string>(), entry.at("src").get<std::string>(),
                                    entry.at("dst").get<std::string>(), vni});
        ASSERT_NE(it, truth.end()) << "not in truth: " << entry.dump();
        EXPECT_EQ(entry.at("estimate").get<std::uint64_t>(), by_packets ? it->second.first : it->second.second)
            << entry.dump();
    }
}

class TunnelKeyOnSamples : public ::testing::TestWithParam<const char*> {};

TEST_P(TunnelKeyOnSamples, OuterEndpointsAndIdsCountAsTsharkCountsThem) {
    std::uint64_t tunnelled = 0;
    const TunnelTruth truth = read_tunnel_truth(GetParam(), tunnelled);
    ASSERT_FALSE(truth.empty());
    for (const char* threads : {"1", "2"}) {
        const json report = single_json_report("-r " + pcap_path(std::string("tunnels/") + GetParam()) + " --threads " +
                                          threads + " --top 20 --key tunnel --key tunnel+vni");
        const json& tunnel = key_entry(report, "tunnel");
        const json& with_ids = key_entry(report, "tunnel+vni");
        for (const char* list : {"top_packets", "top_bytes"}) {
            const bool packets = std::string(list) == "top_packets";
            expect_list_matches(tunnel.at(list), without_ids(truth), packets, false);
            expect_list_matches(with_ids.at(list), truth, packets, true);
        }
        // The tunnel key's N is the frames keyed through a tunnel.
        std::uint64_t sum = 0;
        for (const auto& entry : tunnel.at("top_packets")) sum += entry.at("estimate").get<std::uint64_t>();
        EXPECT_EQ(sum, tunnelled);
    }
}

INSTANTIATE_TEST_SUITE_P(Captures, TunnelKeyOnSamples,
                         ::testing::Values("aiengine-vxlan_ftp.pcap", "deepflow-ip6-vxlan.pcap", "deepflow-geneve.pcap",
                                           "flowtest-gre.pcap", "deepflow-vmware-gre-teb.pcap",
                                           "generated-gre-options.pcap", "generated-vxlan-in-geneve.pcap",
                                           "generated-tenants.pcap"));

// generated-tenants.pcap: 192.168.0.1 -> 192.168.0.10 in VXLAN VNI 100 (3
// frames) and 200 (5), GRE key 7 (2) and 9 (4), and once untunnelled.
TEST(TunnelKeys, PlusVniSeparatesTenantsWithTheSameAddressesAndPlainKeysMergeThem) {
    const std::string path = pcap_path("tunnels/generated-tenants.pcap");
    const json report = single_json_report("-r " + path + " --key dst+vni --key dst --key pair+vni --key vni");
    const std::map<std::uint32_t, std::uint64_t> by_vni = {{100, 3}, {200, 5}, {7, 2}, {9, 4}, {0, 1}};
    for (const char* spec : {"dst+vni", "pair+vni", "vni"}) {
        const json& list = key_entry(report, spec).at("top_packets");
        ASSERT_EQ(list.size(), by_vni.size()) << spec << list.dump();
        for (const auto& entry : list) {
            if (std::string(spec) != "vni") {
                EXPECT_EQ(entry.at("dst"), "192.168.0.10") << entry.dump();
            }
            EXPECT_EQ(entry.at("estimate").get<std::uint64_t>(), by_vni.at(entry.at("vni").get<std::uint32_t>()))
                << spec << entry.dump();
        }
    }
    const json& merged = key_entry(report, "dst").at("top_packets");
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_FALSE(merged.at(0).contains("vni"));
    EXPECT_EQ(merged.at(0).at("estimate"), 15);
    // The 5-tuple lists are those of a run without the tunnel ids: one flow.
    ASSERT_EQ(report.at("top_packets").size(), 1u);
    EXPECT_EQ(report.at("top_packets").at(0).at("estimate"), 15);
}

TEST(TunnelKeys, DistinctInnerSourcesPerTunnel) {
    const json report =
        single_json_report("-r " + pcap_path("tunnels/aiengine-vxlan_ftp.pcap") + " --key tunnel:distinct=src");
    const json& list = key_entry(report, "tunnel:distinct=src").at("top_distinct");
    ASSERT_EQ(list.size(), 2u) << list.dump();
    for (const auto& entry : list) {
        EXPECT_EQ(entry.at("tunnel"), "vxlan");
        EXPECT_EQ(entry.at("distinct"), 1) << entry.dump();  // one inner FTP client or server each way
    }
}

TEST(TunnelKeys, TextCsvAndPrometheusCarryTheTunnelAndTheId) {
    const std::string path = pcap_path("tunnels/generated-tenants.pcap");
    const RunResult text = run_flowsketch("-r " + path + " --interval 0 --key tunnel+vni");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Top tunnel+vni by packets (N = 14"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("vxlan"), std::string::npos) << text.out;
    const RunResult csv = run_flowsketch("-r " + path + " --interval 0 --top 1 --key dst+vni --key tunnel "
                                         "--format csv --probe test");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    const std::vector<std::string> rows = csv_heavy_hitter_lines(csv.out);
    ASSERT_GE(rows.size(), 7u);
    const auto ends_with = [](const std::string& row, const std::string& tail) {
        return row.size() >= tail.size() && row.compare(row.size() - tail.size(), tail.size(), tail) == 0;
    };
    EXPECT_TRUE(ends_with(rows[0], ",probe,seed,metric,value,vlan,vni,tunnel")) << rows[0];
    EXPECT_TRUE(ends_with(rows[3], ",dst+vni,,,,test,0x666c6f77736b7463,,,,200,")) << rows[3];
    EXPECT_NE(rows[5].find(",10.0.1.1,10.0.1.2,"), std::string::npos) << rows[5];
    EXPECT_TRUE(ends_with(rows[5], ",tunnel,,,,test,0x666c6f77736b7463,,,,,gre")) << rows[5];
    EXPECT_NE(csv.out.find(",tunnels.vxlan,8,,,\n"), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",tunnels.gre,6,,,\n"), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",tunnels.outer_keyed.truncated_tunnel,0,,,\n"), std::string::npos) << csv.out;
}

TEST(TunnelKeys, BadCombinationsAreRefusedWithOneLine) {
    const std::string path = pcap_path("tunnels/generated-tenants.pcap");
    for (const std::string spec : {"5tuple+vni", "vni+vni", "dst+vni+vni", "tunnel+vni+vni", "5tuple+vlan+vni"}) {
        const RunResult run = run_flowsketch("-r " + path + " --key " + spec);
        EXPECT_EQ(run.exit_code, 2) << spec;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find("'" + spec + "'"), std::string::npos) << run.err;
        EXPECT_EQ(run.out, "");
    }
    const RunResult room = run_flowsketch("-r " + path + " --key 5tuple+vni");
    EXPECT_NE(room.err.find("no room"), std::string::npos) << room.err;
    for (const std::string spec : {"tunnel", "dst+vni"}) {
        const RunResult run = run_flowsketch("-r " + path + " --tunnels outer --key " + spec);
        EXPECT_EQ(run.exit_code, 2) << spec;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find("--tunnels inner"), std::string::npos) << run.err;
    }
}

}  // namespace
}  // namespace flowsketch::testing
