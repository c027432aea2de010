// Shared helpers for the `flowsketch gen` tests: run the command in-process,
// read its stationary truth, decode its pcap with a decoder of the tests' own
// (independent of capture/), and check a proportion against its binomial error.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "src/commands.hpp"

namespace flowsketch::gen_test {

using flowsketch::app::CommandRunner;
using flowsketch::app::setup_gen_command;

inline std::string tmp_path(const std::string& name) {
    // Per process: ctest runs each test in its own process, several at once.
    return std::string(FLOWSKETCH_TEST_TMP) + "/gen_" + std::to_string(::getpid()) + "_" + name;
}

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Parses `flowsketch gen ARGS` in-process; throws CLI::ParseError on usage errors.
inline CommandRunner parse_gen(std::vector<std::string> args) {
    CLI::App app{"test"};
    CommandRunner runner;
    setup_gen_command(app, runner);
    args.insert(args.begin(), {"flowsketch", "gen"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return runner;
}

inline int run_gen(const std::vector<std::string>& args) {
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

inline Truth read_truth(const std::string& path) {
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

inline std::uint32_t sum16(const std::uint8_t* p, std::size_t n) {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < n; i += 2)
        sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
    if (n % 2 != 0) sum += static_cast<std::uint32_t>(p[n - 1] << 8);
    return sum;
}

inline std::uint16_t fold(std::uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(sum);
}

inline std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }

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

inline PcapScan scan_pcap(const std::string& path) {
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
inline void expect_share(double observed, double p, double n, const char* what) {
    const double se = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(observed, p, 4 * se) << what << " (4 standard errors, n = " << n << ")";
}

}  // namespace flowsketch::gen_test
