// pcapng Interface Statistics Blocks: their counters (isb_ifrecv, isb_ifdrop,
// isb_osdrop) appear in the replayed interface's report entry, the last
// block's values, each only where the file has it; a malformed block is
// skipped without harm.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/capture_builder.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

const Bytes& udp_frame() {
    static const Bytes frame = ethernet(ethertype_ipv4, ipv4(17, udp(1000, 53)));
    return frame;
}

// An Interface Statistics Block of `interface` with these options.
void statistics(PcapngWriter& ng, std::uint32_t interface, const PcapngWriter::Options& options) {
    ByteSink body = ng.sink();
    body.u32(interface);
    body.u32(0);  // timestamp
    body.u32(0);
    for (const auto& [code, value] : options) PcapngWriter::add_option(body, code, value);
    PcapngWriter::end_options(body);
    ng.block(5, body.bytes());
}

json final_report(const std::string& path, const std::string& args = "") {
    const RunResult run = run_flowsketch("-r " + path + " --interval 0 --format json " + args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const auto lines = lines_of(run.out);
    EXPECT_FALSE(lines.empty());
    return lines.empty() ? json::object() : json::parse(lines.back());
}

TEST(PcapngStatistics, TheLastBlocksCountersAppearOnlyWhereTheFileHasThem) {
    for (const bool big_endian : {false, true}) {
        SCOPED_TRACE(big_endian);
        PcapngWriter ng(big_endian);
        ng.interface(1).interface(1);
        ng.packet(0, 1, udp_frame()).packet(1, 2, udp_frame()).packet(1, 3, udp_frame());
        statistics(ng, 0, {{4, ng.encode_u64(10)}, {5, ng.encode_u64(1)}});
        statistics(ng, 0, {{4, ng.encode_u64(12)}, {5, ng.encode_u64(2)}, {7, ng.encode_u64(3)}});  // the last wins
        statistics(ng, 1, {{1, Bytes{'h', 'i'}}, {4, ng.encode_u64(2)}});  // a comment, then isb_ifrecv
        statistics(ng, 9, {{4, ng.encode_u64(99)}});  // no such interface: ignored
        ng.block(5, Bytes{0, 0});                      // too short: skipped
        const std::string path = tmp_path(std::string("isb-") + (big_endian ? "be" : "le") + ".pcapng");
        write_bytes(path, ng.bytes());
        const json report = final_report(path);
        EXPECT_FALSE(report.at("truncated").get<bool>());
        const json& interfaces = report.at("interfaces");
        ASSERT_EQ(interfaces.size(), 2u);
        EXPECT_EQ(interfaces[0].at("isb_ifrecv"), 12);
        EXPECT_EQ(interfaces[0].at("isb_ifdrop"), 2);
        EXPECT_EQ(interfaces[0].at("isb_osdrop"), 3);
        EXPECT_EQ(interfaces[0].at("if_dropped"), 0);  // libpcap's counter of a live capture: none here
        EXPECT_EQ(interfaces[1].at("isb_ifrecv"), 2);
        EXPECT_FALSE(interfaces[1].contains("isb_ifdrop"));
        EXPECT_FALSE(interfaces[1].contains("isb_osdrop"));
        EXPECT_EQ(interfaces[1].at("frames"), 2);
        const RunResult text = run_flowsketch("-r " + path + " --interval 0");
        EXPECT_NE(text.out.find("the file's counters: received 12, dropped by the interface 2, dropped by the system 3\n"),
                  std::string::npos) << text.out;
        EXPECT_NE(text.out.find("the file's counters: received 2\n"), std::string::npos) << text.out;
    }
}

TEST(PcapngStatistics, WithoutStatisticsBlocksNoFieldIsAdded) {
    PcapngWriter ng;
    ng.interface(1).interface(1).packet(0, 1, udp_frame()).packet(1, 2, udp_frame());
    const std::string path = tmp_path("no-isb.pcapng");
    write_bytes(path, ng.bytes());
    const json report = final_report(path);
    for (const auto& interface : report.at("interfaces")) {
        EXPECT_FALSE(interface.contains("isb_ifrecv")) << interface.dump();
        EXPECT_FALSE(interface.contains("isb_ifdrop")) << interface.dump();
    }
}

}  // namespace
}  // namespace flowsketch::testing
