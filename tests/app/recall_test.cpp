// The listing guarantee of docs/keys.md, checked on generated Zipf traces
// whose true counts the generator's truth gives: every key whose true count
// exceeds the (K+1)-th largest by more than ε·N is listed, for the 5-tuple and
// for an extra key spec, by packets and by bytes, over many seeds at small ε;
// and under a SYN flood whose one-packet flows share cells with heavy flows,
// the true top K itself is listed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/support/gen_support.hpp"
#include "tests/support/sanitized_build.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

constexpr std::size_t top_k = 10;
constexpr double epsilon = 1e-4;

// The true keys that must be listed: count above the (K+1)-th count + ε·N.
std::set<std::string> must_list(const std::map<std::string, std::uint64_t>& truth, double n) {
    std::vector<std::uint64_t> counts;
    for (const auto& entry : truth) counts.push_back(entry.second);
    std::sort(counts.rbegin(), counts.rend());
    const double threshold = (counts.size() > top_k ? static_cast<double>(counts[top_k]) : 0) + epsilon * n;
    std::set<std::string> keys;
    for (const auto& [key, count] : truth) {
        if (static_cast<double>(count) > threshold) keys.insert(key);
    }
    return keys;
}

std::set<std::string> listed(const nlohmann::json& rows, bool five_tuple) {
    std::set<std::string> keys;
    for (const auto& row : rows) {
        keys.insert(five_tuple ? std::to_string(row.at("proto").get<int>()) + "\t" + row.at("src").get<std::string>() +
                                     "\t" + row.at("dst").get<std::string>() + "\t" +
                                     std::to_string(row.at("sport").get<int>()) + "\t" +
                                     std::to_string(row.at("dport").get<int>())
                               : row.at("dst").get<std::string>());
    }
    return keys;
}

TEST(Recall, KeysClearlyAboveTheTopKAreListed) {
    std::size_t required = 0;
    for (int seed = 1; seed <= 12; ++seed) {
        const std::string pcap = tmp_path("recall-" + std::to_string(seed) + ".pcap");
        // Few destinations, so the dst key's counts differ from the flows'.
        const RunResult gen = run_flowsketch("gen --out " + pcap + " --packets 200000 --flows 20000 --seed " +
                                             std::to_string(seed));
        ASSERT_EQ(gen.exit_code, 0) << gen.err;
        const gen_test::Truth truth = gen_test::read_truth(pcap + ".truth.tsv");
        std::map<std::string, std::uint64_t> flow_packets, flow_bytes, dst_packets, dst_bytes;
        double packets = 0;
        double bytes = 0;
        for (const auto& [key, counts] : truth.flows) {
            flow_packets[key] = counts.packets;
            flow_bytes[key] = counts.bytes;
            const std::size_t first = key.find('\t');
            const std::size_t second = key.find('\t', first + 1);
            const std::string dst = key.substr(second + 1, key.find('\t', second + 1) - second - 1);
            dst_packets[dst] += counts.packets;
            dst_bytes[dst] += counts.bytes;
            packets += static_cast<double>(counts.packets);
            bytes += static_cast<double>(counts.bytes);
        }
        const RunResult run = run_flowsketch("-r " + pcap + " --interval 0 --format json --no-flows --top " +
                                             std::to_string(top_k) + " --epsilon " + std::to_string(epsilon) +
                                             " --key dst");
        ASSERT_EQ(run.exit_code, 0) << run.err;
        const nlohmann::json report = nlohmann::json::parse(lines_of(run.out).back());
        const nlohmann::json& dst = report.at("keys").at(0);
        const std::pair<std::set<std::string>, std::set<std::string>> checks[] = {
            {must_list(flow_packets, packets), listed(report.at("top_packets"), true)},
            {must_list(flow_bytes, bytes), listed(report.at("top_bytes"), true)},
            {must_list(dst_packets, packets), listed(dst.at("top_packets"), false)},
            {must_list(dst_bytes, bytes), listed(dst.at("top_bytes"), false)},
        };
        for (const auto& [must, got] : checks) {
            required += must.size();
            for (const std::string& key : must) EXPECT_TRUE(got.count(key)) << "seed " << seed << ": " << key;
        }
    }
    EXPECT_GT(required, 100u) << "the traces must put keys clearly above the top K";
}

// A flood of one-packet flows on a narrow sketch (ε = 0.01: w = 2,039, d = 3)
// puts, in most traces, a flood flow in every cell of a heavy flow or of
// several; on the Count-Min estimate alone it is listed as heavy, pushes a
// true top-10 flow out and may carry a lower bound far above the 60 bytes it
// sent. The candidates' exact counts must keep the true top 10 listed (every
// flow whose count is above the 11th's), and lower bounds below the truth
// (each fails with probability δ ≈ 0.001: at most a few of the 600 rows).
TEST(Recall, FloodFlowsDoNotDisplaceTheTrueTopK) {
    constexpr int seeds = sanitized_build ? 6 : 30;
    std::size_t required = 0;
    std::size_t rows = 0;
    std::size_t false_lower = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        const std::string pcap = tmp_path("recall-flood-" + std::to_string(seed) + ".pcap");
        const RunResult gen = run_flowsketch("gen --out " + pcap + " --packets 200000 --flows 2000 --syn-flood 200000 --seed " +
                                             std::to_string(seed));
        ASSERT_EQ(gen.exit_code, 0) << gen.err;
        const gen_test::Truth truth = gen_test::read_truth(pcap + ".truth.tsv");
        std::map<std::string, std::uint64_t> flow_packets, flow_bytes;
        for (const auto& [key, counts] : truth.flows) {
            flow_packets[key] = counts.packets;
            flow_bytes[key] = counts.bytes;
        }
        const RunResult run = run_flowsketch("-r " + pcap + " --interval 0 --format json --no-flows --top " +
                                             std::to_string(top_k) + " --epsilon 0.01");
        ASSERT_EQ(run.exit_code, 0) << run.err;
        const nlohmann::json report = nlohmann::json::parse(lines_of(run.out).back());
        const std::pair<const std::map<std::string, std::uint64_t>*, const char*> lists[] = {
            {&flow_packets, "top_packets"}, {&flow_bytes, "top_bytes"}};
        for (const auto& [counts, name] : lists) {
            std::vector<std::uint64_t> sorted;
            for (const auto& entry : *counts) sorted.push_back(entry.second);
            std::sort(sorted.rbegin(), sorted.rend());
            const std::set<std::string> got = listed(report.at(name), true);
            for (const auto& [key, count] : *counts) {
                if (count <= sorted.at(top_k)) continue;
                ++required;
                EXPECT_TRUE(got.count(key)) << "seed " << seed << " " << name << ": " << key << " (" << count << ")";
            }
            for (const auto& row : report.at(name)) {
                const std::string key = *listed(nlohmann::json::array({row}), true).begin();
                ++rows;
                if (row.at("lower").get<std::uint64_t>() > counts->at(key)) ++false_lower;
            }
        }
        std::remove(pcap.c_str());
        std::remove((pcap + ".truth.tsv").c_str());
    }
    EXPECT_GE(required, top_k * seeds) << "the traces must have a clear top K";
    EXPECT_LE(false_lower, 3u) << "of " << rows << " rows";
}

}  // namespace
}  // namespace flowsketch::testing
