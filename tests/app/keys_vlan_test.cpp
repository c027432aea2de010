// VLAN keys end to end: the same addresses on two VLANs stay apart under a
// `+vlan` spec and are one key without it; the 5-tuple lists and the flow
// lifecycle are the same whether or not a spec asks for the VLAN id. The
// truth is the traffic the test writes (and, for the sample capture, tshark's
// count per VLAN id).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/capture_builder.hpp"
#include "tests/support/json_reports.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

constexpr std::uint32_t victim = 0xc6336407;  // 198.51.100.7

// An Ethernet frame with the given tags (TPID, tag control information), outer first.
Bytes tagged(const std::vector<std::pair<std::uint16_t, std::uint16_t>>& tags, const Bytes& ip) {
    Bytes out{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
    for (const auto& [tpid, tci] : tags) {
        put_be16(out, tpid);
        put_be16(out, tci);
    }
    put_be16(out, ethertype_ipv4);
    return concat(out, ip);
}

// One segment of the trace: `sources` sources each sending `each` UDP packets
// from port 1000 to the victim's port 53, behind `tags`; the outer VLAN id the
// key should carry is `vlan`.
struct Segment {
    std::uint16_t vlan;
    std::vector<std::pair<std::uint16_t, std::uint16_t>> tags;
    std::uint32_t sources;
    std::uint32_t each;
};

// VLANs 10 and 20 carry the same sources to the same victim; untagged and
// priority-tagged frames are VLAN 0; a QinQ segment is keyed by its outer tag.
const std::vector<Segment>& segments() {
    static const std::vector<Segment> all = {
        {10, {{0x8100, 10}}, 3, 100},
        {20, {{0x8100, 0x6000 | 20}}, 5, 40},                // priority 3
        {0, {}, 2, 30},                                       // untagged
        {0, {{0x8100, 0xa000}}, 2, 5},                        // priority-tagged: VLAN 0
        {300, {{0x88a8, 300}, {0x8100, 10}}, 4, 10},          // QinQ: outer 300, inner 10
    };
    return all;
}

struct Truth {
    std::map<std::uint16_t, std::uint64_t> packets_by_vlan;  // to the victim, per outer VLAN id
    std::map<std::uint16_t, std::uint32_t> sources_by_vlan;
    std::uint64_t packets = 0;
    std::uint64_t largest_flow = 0;  // a 5-tuple's packets summed over every VLAN
};

std::string write_trace(Truth& truth) {
    PcapWriter pcap;
    std::map<std::uint32_t, std::uint64_t> per_source;  // source i's 5-tuple, over every VLAN
    std::uint32_t tick = 0;
    for (const Segment& segment : segments()) {
        for (std::uint32_t round = 0; round < segment.each; ++round) {
            for (std::uint32_t s = 0; s < segment.sources; ++s) {
                const Ipv4Fields fields{5, {}, 0x0a000001 + s, victim};
                // A packet every 10 ms: the trace spans several one-second intervals.
                pcap.record(tick / 100, (tick % 100) * 10000, tagged(segment.tags, ipv4(17, udp(1000, 53), fields)));
                ++tick;
                ++per_source[s];
            }
        }
        truth.packets_by_vlan[segment.vlan] += std::uint64_t{segment.sources} * segment.each;
        truth.sources_by_vlan[segment.vlan] = std::max(truth.sources_by_vlan[segment.vlan], segment.sources);
        truth.packets += std::uint64_t{segment.sources} * segment.each;
    }
    for (const auto& entry : per_source) truth.largest_flow = std::max(truth.largest_flow, entry.second);
    const std::string path = tmp_path("two-vlans-same-addresses.pcap");
    write_bytes(path, pcap.bytes());
    return path;
}

TEST(KeysVlan, TheSameAddressesOnTwoVlansStayApartUnderPlusVlan) {
    Truth truth;
    const std::string path = write_trace(truth);
    for (const char* threads : {"1", "2"}) {
        const nlohmann::json report =
            single_json_report("-r " + path + " --threads " + threads + " --key dst+vlan --key dst --key vlan");
        // dst+vlan: one entry per VLAN id, each the packets of that VLAN.
        const nlohmann::json& by_vlan = key_entry(report, "dst+vlan").at("top_packets");
        ASSERT_EQ(by_vlan.size(), truth.packets_by_vlan.size()) << by_vlan.dump();
        for (const auto& entry : by_vlan) {
            EXPECT_EQ(entry.at("dst"), "198.51.100.7");
            EXPECT_EQ(entry.size(), 5u) << "dst, vlan, estimate, lower, shares_cells: " << entry.dump();
            const auto vlan = entry.at("vlan").get<std::uint16_t>();
            ASSERT_TRUE(truth.packets_by_vlan.count(vlan)) << entry.dump();
            const std::uint64_t packets = truth.packets_by_vlan.at(vlan);
            EXPECT_GE(entry.at("estimate").get<std::uint64_t>(), packets) << entry.dump();
            EXPECT_LE(entry.at("lower").get<std::uint64_t>(), packets) << entry.dump();
        }
        EXPECT_EQ(by_vlan.at(0).at("vlan"), 10);  // 300 packets, the most
        // dst alone: every VLAN is one key.
        const nlohmann::json& by_dst = key_entry(report, "dst").at("top_packets");
        ASSERT_EQ(by_dst.size(), 1u);
        EXPECT_FALSE(by_dst.at(0).contains("vlan"));
        EXPECT_GE(by_dst.at(0).at("estimate").get<std::uint64_t>(), truth.packets);
        EXPECT_LE(by_dst.at(0).at("lower").get<std::uint64_t>(), truth.packets);
        // vlan alone: the same counts, without addresses.
        const nlohmann::json& vlans = key_entry(report, "vlan").at("top_packets");
        ASSERT_EQ(vlans.size(), truth.packets_by_vlan.size());
        EXPECT_EQ(vlans.at(0).size(), 4u) << vlans.at(0).dump();
        // The 5-tuple lists key a flow across VLANs as one.
        EXPECT_GE(report.at("top_packets").at(0).at("estimate").get<std::uint64_t>(), truth.largest_flow);
        EXPECT_LE(report.at("top_packets").at(0).at("lower").get<std::uint64_t>(), truth.largest_flow);
    }
}

// A +vlan spec makes the decoder write VLAN ids, which the 5-tuple's lists and
// the flow lifecycle must not see: they are the same as without the spec.
TEST(KeysVlan, FiveTupleListsAndFlowsIgnoreTheVlanId) {
    Truth truth;
    const std::string path = write_trace(truth);
    for (const char* threads : {"1", "2"}) {
        const std::string args = "-r " + path + " --threads " + threads + " --interval 1 --format json";
        const RunResult plain = run_flowsketch(args + " --key dst");
        const RunResult with_vlan = run_flowsketch(args + " --key dst --key 5tuple+vlan");
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        ASSERT_EQ(with_vlan.exit_code, 0) << with_vlan.err;
        const std::vector<std::string> a = lines_of(plain.out);
        const std::vector<std::string> b = lines_of(with_vlan.out);
        ASSERT_EQ(a.size(), b.size());
        ASSERT_GE(a.size(), 2u);
        for (std::size_t i = 0; i < a.size(); ++i) {
            const nlohmann::json x = nlohmann::json::parse(a[i]);
            const nlohmann::json y = nlohmann::json::parse(b[i]);
            for (const char* field : {"top_packets", "top_bytes", "flows", "packets", "bytes"}) {
                EXPECT_EQ(x.at(field), y.at(field)) << field << " of report " << i;
            }
            if (x.contains("changes")) {
                EXPECT_EQ(x.at("changes"), y.at("changes"));
            }
            EXPECT_EQ(x.at("keys").at(0), y.at("keys").at(0)) << "dst of report " << i;
        }
        // The flows: the sources' 5-tuples, one each however many VLANs carry them.
        const nlohmann::json last = nlohmann::json::parse(b.back());
        const nlohmann::json& by_flow_vlan = key_entry(last, "5tuple+vlan").at("top_packets");
        EXPECT_EQ(by_flow_vlan.at(0).at("vlan"), 10);
        EXPECT_EQ(by_flow_vlan.at(0).at("estimate"), 100);
    }
}

TEST(KeysVlan, DistinctSourcesPerDestinationAndVlan) {
    Truth truth;
    const std::string path = write_trace(truth);
    const nlohmann::json report = single_json_report("-r " + path + " --key dst+vlan:distinct=src");
    const nlohmann::json& key = key_entry(report, "dst+vlan:distinct=src");
    const nlohmann::json& top = key.at("top_distinct");
    ASSERT_EQ(top.size(), truth.sources_by_vlan.size()) << top.dump();
    for (const auto& entry : top) {
        const auto sources = static_cast<double>(truth.sources_by_vlan.at(entry.at("vlan").get<std::uint16_t>()));
        EXPECT_LE(entry.at("distinct_lower").get<double>(), sources) << entry.dump();
        EXPECT_GE(entry.at("distinct_upper").get<double>(), sources) << entry.dump();
    }
    EXPECT_EQ(top.at(0).at("vlan"), 20);  // five sources
}

TEST(KeysVlan, TextCsvAndBadSpecs) {
    Truth truth;
    const std::string path = write_trace(truth);
    const RunResult text = run_flowsketch("-r " + path + " --interval 0 --key dst+vlan");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Top dst+vlan by packets"), std::string::npos) << text.out;
    const RunResult csv =
        run_flowsketch("-r " + path + " --interval 0 --top 1 --key dst+vlan --format csv --probe test");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    const std::vector<std::string> rows = csv_heavy_hitter_lines(csv.out);
    ASSERT_EQ(rows.size(), 1u + 2u + 2u);
    const auto ends_with = [](const std::string& row, const std::string& tail) {
        return row.size() >= tail.size() && row.compare(row.size() - tail.size(), tail.size(), tail) == 0;
    };
    EXPECT_TRUE(ends_with(rows[0], ",key,distinct,distinct_lower,distinct_upper,probe,seed,metric,value,vlan,vni,tunnel"))
        << rows[0];
    const std::string probe_and_seed = ",test,0x666c6f77736b7463,,,";  // then metric, value: empty
    EXPECT_TRUE(ends_with(rows[1], ",5tuple,,," + probe_and_seed + ",,")) << rows[1];  // no VLAN in the 5-tuple's rows
    EXPECT_NE(rows[3].find(",,,198.51.100.7,,,"), std::string::npos) << rows[3];  // no proto, src or ports
    EXPECT_TRUE(ends_with(rows[3], ",dst+vlan,,," + probe_and_seed + "10,,")) << rows[3];
    for (const std::string spec : {"vlan+vlan", "dst+vlan+vlan", "dst/33+vlan", "dst+vlan:distinct=dst"}) {
        const RunResult run = run_flowsketch("-r " + path + " --key " + spec);
        EXPECT_EQ(run.exit_code, 2) << spec;
        EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find("'" + spec + "'"), std::string::npos) << run.err;
        EXPECT_EQ(run.out, "");
    }
}

// The sample capture with 802.1Q-tagged frames: packets and bytes per VLAN id
// as tshark counts them (pcaps/zeek-mixed-vlan-mpls.pcap.vlan-truth.tsv).
TEST(KeysVlan, SampleCaptureCountsPerVlanMatchTshark) {
    std::ifstream in(pcap_path("zeek-mixed-vlan-mpls.pcap.vlan-truth.tsv"));
    std::map<std::uint16_t, std::pair<std::uint64_t, std::uint64_t>> truth;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#' || line.rfind("vlan", 0) == 0) continue;
        std::istringstream fields(line);
        std::uint16_t vlan = 0;
        std::uint64_t packets = 0;
        std::uint64_t bytes = 0;
        fields >> vlan >> packets >> bytes;
        truth[vlan] = {packets, bytes};
    }
    ASSERT_EQ(truth.size(), 2u);
    const nlohmann::json report = single_json_report("-r " + pcap_path("zeek-mixed-vlan-mpls.pcap") + " --key vlan");
    const nlohmann::json& key = key_entry(report, "vlan");
    for (const char* list : {"top_packets", "top_bytes"}) {
        const bool packets = std::string(list) == "top_packets";
        ASSERT_EQ(key.at(list).size(), truth.size());
        for (const auto& entry : key.at(list)) {
            const auto& [p, b] = truth.at(entry.at("vlan").get<std::uint16_t>());
            // 47 packets in a sketch of 11,299 columns: every count is exact.
            EXPECT_EQ(entry.at("estimate").get<std::uint64_t>(), packets ? p : b) << entry.dump();
        }
    }
}

}  // namespace
}  // namespace flowsketch::testing
