// `flowsketch gen --lifetimes`: the pcap agrees with the lifetime truth packet
// for packet, the drawn pauses, durations, endings and arrivals follow their
// distributions, and interval counts from the truth match a packet-level replay.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/flow_truth.hpp"
#include "tests/support/gen_support.hpp"

namespace {

using namespace flowsketch::gen_test;
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

}  // namespace
