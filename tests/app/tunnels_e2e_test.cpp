// End-to-end: the flowsketch binary on tunnelled captures (pcaps/tunnels/),
// checked against tshark's innermost IP header (the default, --tunnels inner)
// and its outermost one (--tunnels outer): exact totals, the exact flow set,
// and each flow's true count within [lower, estimate].
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/json_reports.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

struct TunnelCapture {
    const char* file;
    const char* type;  // the tunnel type the report counts ("" for none)
};

const TunnelCapture captures[] = {
    {"aiengine-vxlan_ftp.pcap", "vxlan"},
    {"deepflow-ip6-vxlan.pcap", "vxlan"},
    {"deepflow-geneve.pcap", "geneve"},
    {"opflex-geneve.pcap", ""},  // Geneve carrying ARP only: keyed by the outer header
    {"flowtest-gre.pcap", "gre"},
    {"deepflow-vmware-gre-teb.pcap", "gre"},
    {"deepflow-decapsulate_erspan1.pcap", "erspan"},
    {"deepflow-ipip.pcap", "ip_in_ip"},
    {"peafowl-4in4.pcap", "ip_in_ip"},
    {"peafowl-6in4.pcap", "ip_in_ip"},
    {"mercury-ip_encapsulation.pcap", "ip_in_ip"},
    {"aiengine-gprs_icmp.pcap", "gtp_u"},
    {"aiengine-gprs_sip_flow.pcap", "gtp_u"},
    {"mercury-pppoe_double_vlan_tagging.pcap", ""},
    {"generated-4in6.pcap", "ip_in_ip"},
    {"generated-erspan3.pcap", "erspan"},
    {"generated-gre-options.pcap", "gre"},
    {"generated-vxlan-in-geneve.pcap", "vxlan"},
    {"generated-gtp-extensions.pcap", "gtp_u"},
    {"generated-pppoe-compressed.pcap", ""},
    {"generated-deep-nesting.pcap", "ip_in_ip"},
    {"generated-tenants.pcap", "vxlan"},  // and GRE; one inner flow, also untunnelled
};

std::string tunnel_path(const std::string& name) { return pcap_path("tunnels/" + name); }

// Totals exact, frames = packets + skipped, and every flow of the truth
// reported with its true counts within the bounds.
void expect_matches(const json& report, const Truth& truth) {
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), truth.totals.at("frames"));
    EXPECT_EQ(report.at("packets").get<std::uint64_t>(), truth.totals.at("ip_packets"));
    EXPECT_EQ(report.at("bytes").get<std::uint64_t>(), truth.totals.at("ip_bytes"));
    std::uint64_t skipped = 0;
    for (const auto& [reason, count] : report.at("skipped").items()) skipped += count.get<std::uint64_t>();
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), report.at("packets").get<std::uint64_t>() + skipped);
    for (const char* ranking : {"top_packets", "top_bytes"}) {
        const bool by_packets = std::string(ranking) == "top_packets";
        const json& flows = report.at(ranking);
        ASSERT_EQ(flows.size(), truth.flows.size()) << ranking;
        for (const auto& flow : flows) {
            const auto it = truth.flows.find(truth_key_of(flow));
            ASSERT_NE(it, truth.flows.end()) << "flow not in truth: " << flow.dump();
            const std::uint64_t true_count = by_packets ? it->second.packets : it->second.bytes;
            EXPECT_LE(flow.at("lower").get<std::uint64_t>(), true_count) << flow.dump();
            EXPECT_GE(flow.at("estimate").get<std::uint64_t>(), true_count) << flow.dump();
        }
    }
}

void PrintTo(const TunnelCapture& capture, std::ostream* out) { *out << capture.file; }

class TunnelledCapture : public ::testing::TestWithParam<TunnelCapture> {};

TEST_P(TunnelledCapture, InnerByDefaultOuterOnRequest) {
    const TunnelCapture& capture = GetParam();
    const std::string file = tunnel_path(capture.file);
    const Truth inner = read_truth(file + ".truth.tsv");
    const Truth outer = read_truth(file + ".outer.truth.tsv");
    for (const char* threads : {"1", "2"}) {
        SCOPED_TRACE(std::string("--threads ") + threads);
        const RunResult run = run_flowsketch("-r " + file + " --interval 0 --format json --top 1000 --threads " +
                                             threads);
        ASSERT_EQ(run.exit_code, 0) << run.err;
        EXPECT_EQ(run.err, "");
        const json report = final_json_report(run);
        expect_matches(report, inner);
        if (std::string(capture.type).empty()) {
            // No tunnel reached an inner IP packet: the flows are the outer ones.
            EXPECT_EQ(inner.flows.size(), outer.flows.size());
        } else {
            ASSERT_TRUE(report.contains("tunnels")) << report.dump();
            EXPECT_GT(report.at("tunnels").at(capture.type).get<std::uint64_t>(), 0u);
        }
    }
    const RunResult run = run_flowsketch("-r " + file + " --interval 0 --format json --top 1000 --tunnels outer");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json report = final_json_report(run);
    expect_matches(report, outer);
    EXPECT_FALSE(report.contains("tunnels"));
}

INSTANTIATE_TEST_SUITE_P(Pcaps, TunnelledCapture, ::testing::ValuesIn(captures),
                         [](const auto& param_info) {
                             std::string name = param_info.param.file;
                             for (char& c : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             }
                             return name;
                         });

// Per tunnel type, the frames keyed by an inner flow: tshark's count of frames
// whose innermost key differs from the outermost, when one type is in the file.
TEST(Tunnels, TypeCountsAreTheFramesTsharkKeysInside) {
    for (const TunnelCapture& capture : captures) {
        const std::string type = capture.type;
        if (type.empty() || std::string(capture.file).find("nesting") != std::string::npos ||
            std::string(capture.file).find("in-geneve") != std::string::npos ||
            std::string(capture.file).find("tenants") != std::string::npos) {
            // Several tunnels per frame (counted once per type crossed), or
            // several types and the inner flow also outside a tunnel.
            continue;
        }
        SCOPED_TRACE(capture.file);
        const std::string file = tunnel_path(capture.file);
        const Truth inner = read_truth(file + ".truth.tsv");
        const Truth outer = read_truth(file + ".outer.truth.tsv");
        // Packets in flows tshark keys only inside (no outer flow has that key).
        std::uint64_t inside = 0;
        for (const auto& [key, flow] : inner.flows) {
            if (outer.flows.count(key) == 0) inside += flow.packets;
        }
        const json report = final_json_report(run_flowsketch("-r " + file + " --interval 0 --format json"));
        EXPECT_EQ(report.at("tunnels").at(type).get<std::uint64_t>(), inside);
    }
}

// Every frame of the malformed capture keeps its outer key (tshark's outermost
// header), and each is counted under the reason the generator broke it for.
TEST(Tunnels, MalformedInnerPacketsKeyTheOuterHeaderByReason) {
    const std::string file = tunnel_path("generated-malformed-tunnels.pcap");
    const Truth outer = read_truth(file + ".outer.truth.tsv");
    std::map<std::string, std::uint64_t> expected;
    std::ifstream reasons(file + ".reasons.tsv");
    ASSERT_TRUE(reasons);
    for (std::string line; std::getline(reasons, line);) {
        if (line.empty() || line[0] == '#') continue;
        ++expected[line.substr(line.find('\t') + 1)];
    }
    ASSERT_FALSE(expected.empty());
    for (const char* threads : {"1", "2"}) {
        const json report = final_json_report(
            run_flowsketch("-r " + file + " --interval 0 --format json --top 1000 --threads " + threads));
        expect_matches(report, outer);
        ASSERT_TRUE(report.contains("tunnels"));
        for (const auto& [reason, count] : report.at("tunnels").at("outer_keyed").items()) {
            const auto it = expected.find(reason);
            EXPECT_EQ(count.get<std::uint64_t>(), it == expected.end() ? 0u : it->second) << reason;
        }
        for (const auto& [reason, count] : expected) {
            EXPECT_TRUE(report.at("tunnels").at("outer_keyed").contains(reason)) << reason;
        }
    }
}

// The text report names the tunnel types and the reasons, and only when met.
TEST(Tunnels, TextReportListsTunnelsOnlyWhenMet) {
    const RunResult tunnelled = run_flowsketch("-r " + tunnel_path("flowtest-gre.pcap") + " --interval 0");
    EXPECT_NE(tunnelled.out.find("tunnelled, keyed by the inner flow: gre 10\n"), std::string::npos)
        << tunnelled.out;
    const RunResult plain = run_flowsketch("-r " + pcap_path("zeek-mixed-vlan-mpls.pcap") + " --interval 0");
    EXPECT_EQ(plain.out.find("tunnelled"), std::string::npos);
    const RunResult bad = run_flowsketch("-r " + tunnel_path("flowtest-gre.pcap") + " --tunnels sideways");
    EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace flowsketch::testing
