// `flowsketch gen --syn-flood`: exactly the flood flows are added, as bare
// SYNs spread over the background's span, and the background stays the same
// bytes; determinism, the lifetime mode, and the flood's sources and times at
// scale.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "capture/decode/decode.hpp"
#include "capture/file/pcap_file_source.hpp"
#include "core/key/flow_key.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/syn_flood.hpp"
#include "tests/support/flow_truth.hpp"
#include "tests/support/gen_support.hpp"

namespace {

using namespace flowsketch::gen_test;
using flowsketch::testing::FlowEndFlag;
using flowsketch::testing::lifecycle_counts;
using flowsketch::testing::LifetimeFlow;
using flowsketch::testing::LifetimeTruth;
using flowsketch::testing::read_lifetime_truth;

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
