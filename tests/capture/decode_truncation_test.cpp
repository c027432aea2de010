// Decoder tests of truncation at every captured length, and of the skip reasons' names.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/capture/decode_test_frames.hpp"

namespace {

using namespace decode_test;

// ---------------------------------------------------------------------------------------------
// Truncation at every length

struct PrefixCase {
    std::string name;
    int link;
    Frame frame;
    std::size_t needed;  // the shortest capture that keys: every shorter prefix is truncated
};

std::vector<PrefixCase> prefix_cases() {
    const Frame tcp4 = Ipv4().protocol(kTcp).ihl(7).wrap(tcp(1, 2, 0x02));
    const Frame udp6_chain =
        ipv6(0, ext_header(51, 1) + auth_header(44) + fragment_header(kUdp, 0, true) + udp(3, 4));
    std::vector<PrefixCase> cases;
    // TCP: bytes after the flags (6 of them) are not needed.
    cases.push_back({"ethernet_ipv4_options_tcp", link_type::ethernet, ethernet(0x0800) + tcp4, 0});
    cases.back().needed = cases.back().frame.size() - 6;
    // UDP: the checksum and payload are not needed.
    cases.push_back({"qinq_mpls_ipv6_chain_udp", link_type::ethernet,
                     ethernet(0x88A8) + vlan_tag(0x8100) + vlan_tag(0x8847) + mpls_label(1, false) +
                         mpls_label(2, true) + udp6_chain,
                     0});
    cases.back().needed = cases.back().frame.size() - 6;
    cases.push_back(
        {"pppoe_ipv4_sctp", link_type::ethernet,
         ethernet(0x8864) + pppoe_session(0x0021) + Ipv4().protocol(132).wrap(ports_then(9, 10, 8)),
         0});
    cases.back().needed = cases.back().frame.size() - 8;
    cases.push_back(
        {"sll_ipv6_tcp", link_type::linux_sll, sll(0x86DD) + ipv6(kTcp, tcp(5, 6, 1)), 0});
    cases.back().needed = cases.back().frame.size() - 6;
    cases.push_back({"sll2_vlan_ipv4_udp", link_type::linux_sll2,
                     sll2(0x8100) + vlan_tag(0x0800) + Ipv4().protocol(kUdp).wrap(udp(7, 8)), 0});
    cases.back().needed = cases.back().frame.size() - 6;
    cases.push_back(
        {"null_ipv6_icmp6", link_type::null, null_header(28, true) + ipv6(kIcmp6, icmp_echo()), 0});
    cases.back().needed = 4 + 40;  // no transport bytes needed
    cases.push_back({"loop_ipv4_later_fragment", link_type::loop,
                     null_header(2, false) + Ipv4().protocol(kUdp).fragment(100).wrap(udp(1, 2)),
                     0});
    cases.back().needed = 4 + 20;
    cases.push_back(
        {"raw_ipv4_dccp", link_type::raw, Ipv4().protocol(33).wrap(ports_then(11, 12, 12)), 0});
    cases.back().needed = 24;
    cases.push_back(
        {"ipv6_later_fragment", link_type::ipv6,
         ipv6(60, ext_header(44) + fragment_header(kTcp, 8, true) + Frame{}.fill(32, 1)), 0});
    cases.back().needed = 40 + 8 + 8;
    return cases;
}

TEST(DecodeTruncation, EveryPrefixIsTruncatedUntilTheKeyIsComplete) {
    for (const PrefixCase& c : prefix_cases()) {
        SCOPED_TRACE(c.name);
        const Decoded full = decode(c.link, c.frame);
        ASSERT_EQ(full.reason, SkipReason::none);
        for (std::size_t length = 0; length < c.needed; ++length) {
            const SkipReason reason = decode(c.link, c.frame, length).reason;
            EXPECT_TRUE(is_truncation(reason))
                << "length " << length << ": " << skip_reason_name(reason);
        }
        for (std::size_t length = c.needed; length <= c.frame.size(); ++length) {
            const Decoded d = decode(c.link, c.frame, length);
            ASSERT_EQ(d.reason, SkipReason::none) << "length " << length;
            EXPECT_EQ(d.packet.key, full.packet.key) << "length " << length;
            EXPECT_EQ(d.packet.tcp_flags, full.packet.tcp_flags);
            EXPECT_EQ(d.packet.is_fragment, full.packet.is_fragment);
        }
    }
}

TEST(DecodeTruncation, ReasonNamesTheLayer) {
    const Frame frame =
        ethernet(0x8100) + vlan_tag(0x0800) + Ipv4().protocol(kTcp).wrap(tcp(1, 2, 2));
    EXPECT_EQ(decode(link_type::ethernet, frame, 13).reason, SkipReason::truncated_link);
    EXPECT_EQ(decode(link_type::ethernet, frame, 17).reason, SkipReason::truncated_link);
    EXPECT_EQ(decode(link_type::ethernet, frame, 18).reason, SkipReason::truncated_ip);
    EXPECT_EQ(decode(link_type::ethernet, frame, 37).reason, SkipReason::truncated_ip);
    EXPECT_EQ(decode(link_type::ethernet, frame, 38).reason, SkipReason::truncated_transport);
    const Frame mpls = ethernet(0x8847) + mpls_label(1, true) + ipv6(kUdp, udp(1, 2));
    EXPECT_EQ(decode(link_type::ethernet, mpls, 17).reason, SkipReason::truncated_link);
    EXPECT_EQ(decode(link_type::ethernet, mpls, 18).reason, SkipReason::truncated_ip);
}

// ---------------------------------------------------------------------------------------------
// Reason names

TEST(SkipReasonName, DistinctAndNonEmptyForEveryReason) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < flowsketch::capture::skip_reason_count; ++i) {
        const auto name = flowsketch::capture::skip_reason_name(static_cast<SkipReason>(i));
        EXPECT_FALSE(name.empty()) << i;
        EXPECT_NE(name, "unknown") << i;
        names.emplace(name);
    }
    EXPECT_EQ(names.size(), flowsketch::capture::skip_reason_count);
    EXPECT_EQ(flowsketch::capture::skip_reason_name(SkipReason::truncated_ip), "truncated_ip");
    EXPECT_EQ(flowsketch::capture::skip_reason_name(SkipReason::none), "none");
    EXPECT_EQ(flowsketch::capture::skip_reason_name(static_cast<SkipReason>(200)), "unknown");
}

}  // namespace
