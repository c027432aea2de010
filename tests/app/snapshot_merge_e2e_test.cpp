// Snapshots and `flowsketch merge`, through the binary. The bound under test:
// Count-Min sketches of one seed and shape add, so the merge of snapshots
// taken on any split of a capture (by time, by packet across two probes)
// carries exactly the estimates of one run over the whole capture; what is
// not linear (flow lifecycle counts across probes) is checked to be what the
// docs say. Files that are damaged, foreign or of another configuration are
// refused with one line and nothing on standard output.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string measure_options = "--top 8 --key src/24 --key dst:distinct=sport --format json";

// A fresh directory under the tests' scratch space.
std::string fresh_dir(const std::string& name) {
    const std::string dir = tmp_path(name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// 120,000 packets of 3,000 Zipf flows over 60 s: several intervals, flows
// that span them. Each test runs in a process of its own, some at once: the
// trace is generated under a name of the process's and renamed into place,
// so no test reads it half-written (gen writes the same bytes every time).
const std::string& trace() {
    static const std::string path = [] {
        const std::string out = tmp_path("snapshot-trace.pcap");
        if (fs::exists(out)) return out;
        const std::string own = out + "." + std::to_string(::getpid());
        const RunResult gen = run_flowsketch("gen --out " + own +
                                             " --packets 120000 --flows 3000 --rate 2000 --start 1700000003 --seed 17");
        if (gen.exit_code != 0) throw std::runtime_error("gen failed: " + gen.err);
        fs::rename(own, out);
        fs::remove(own + ".truth.tsv");
        return out;
    }();
    return path;
}

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> reports;
    for (const std::string& line : lines_of(text)) reports.push_back(json::parse(line));
    return reports;
}

std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

std::string joined(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& word : words) text += " " + word;
    return text;
}

// Writes the frames of a classic pcap for which keep(index) holds.
void split_pcap(const std::string& in_path, const std::string& out_path, int parity) {
    const std::string bytes = read_file(in_path);
    std::string out = bytes.substr(0, 24);
    std::size_t at = 24;
    for (std::size_t index = 0; at + 16 <= bytes.size(); ++index) {
        const auto byte = [&](std::size_t i) { return std::uint32_t{static_cast<unsigned char>(bytes[at + i])}; };
        const std::uint32_t captured = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
        if (static_cast<int>(index % 2) == parity) out += bytes.substr(at, 16 + captured);
        at += 16 + captured;
    }
    std::ofstream(out_path, std::ios::binary) << out;
}

// A list row without its numbers: the key it is about.
json listed_key_of(json row) {
    for (const char* field : {"estimate", "lower", "shares_cells", "distinct", "distinct_lower", "distinct_upper"}) {
        row.erase(field);
    }
    return row;
}

// Heavy hitters: the same keys in the same order, flagged alike, each row's
// [lower, estimate] overlapping the other's. The candidates' exact counts,
// which lower estimates and raise lower bounds, count from when a key entered
// its window's set: a run's and its intervals' differ, both bounds of the truth.
void expect_same_hitters(const json& merged, const json& whole, const std::string& name) {
    ASSERT_EQ(merged.size(), whole.size()) << name;
    for (std::size_t i = 0; i < whole.size(); ++i) {
        EXPECT_EQ(listed_key_of(merged[i]), listed_key_of(whole[i])) << name << " row " << i;
        EXPECT_EQ(merged[i]["shares_cells"], whole[i]["shares_cells"]) << name << " row " << i;
        EXPECT_LE(merged[i]["lower"].get<std::uint64_t>(), whole[i]["estimate"].get<std::uint64_t>()) << name;
        EXPECT_LE(whole[i]["lower"].get<std::uint64_t>(), merged[i]["estimate"].get<std::uint64_t>()) << name;
    }
}

// The fields the sketches determine: equal, byte for byte, in both reports;
// the heavy hitters as expect_same_hitters says.
// Not compared: what changed since the previous interval (a merged report has
// no previous interval), and which keys make a distinct ranking: it is ranked
// among the windows' distinct candidates, and a key whose items are spread
// over windows or probes may be none's; a key both list has the same numbers.
void expect_same_estimates(const json& merged, const json& whole, bool same_memory) {
    for (const char* field : {"frames", "packets", "bytes", "skipped", "epsilon", "delta", "cms", "distinct", "seed"}) {
        EXPECT_EQ(merged[field], whole[field]) << field;
    }
    expect_same_hitters(merged["top_packets"], whole["top_packets"], "top_packets");
    expect_same_hitters(merged["top_bytes"], whole["top_bytes"], "top_bytes");
    ASSERT_EQ(merged["keys"].size(), whole["keys"].size());
    for (std::size_t k = 0; k < whole["keys"].size(); ++k) {
        json a = merged["keys"][k];
        json b = whole["keys"][k];
        for (const char* list : {"top_packets", "top_bytes"}) expect_same_hitters(a[list], b[list], list);
        for (const char* field : {"changes", "changes_bytes", "top_distinct", "top_packets", "top_bytes"}) {
            a.erase(field);
            b.erase(field);
        }
        if (!same_memory) {
            a.erase("memory_bytes");
            b.erase("memory_bytes");
        }
        EXPECT_EQ(a, b) << "key spec " << b["spec"];
        if (!whole["keys"][k].contains("top_distinct")) continue;
        std::size_t shared = 0;
        for (const json& row : merged["keys"][k]["top_distinct"]) {
            for (const json& other : whole["keys"][k]["top_distinct"]) {
                if (listed_key_of(row) != listed_key_of(other)) continue;
                EXPECT_EQ(row, other);
                ++shared;
            }
        }
        EXPECT_GT(shared, 0u) << "no key of the distinct ranking in both";
    }
}

TEST(SnapshotMerge, IntervalsOfOneRunMergeIntoItsFinalReport) {
    const std::string dir = fresh_dir("snapshots-by-time");
    const RunResult run = run_flowsketch("-r " + trace() + " --interval 10 --probe edge-1 --snapshot-dir " + dir +
                                         " " + measure_options);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<json> reports = json_lines(run.out);
    const std::vector<std::string> files = files_in(dir);
    ASSERT_EQ(files.size(), reports.size() - 1);  // one per interval, none for the run
    EXPECT_EQ(fs::path(files.front()).filename().string(), "edge-1-20231114T221320.000Z-interval.fsnap");

    const RunResult merge = run_flowsketch("merge --format json" + joined(files));
    ASSERT_EQ(merge.exit_code, 0) << merge.err;
    const std::vector<json> merged = json_lines(merge.out);
    ASSERT_EQ(merged.size(), 1u);
    const json& whole = reports.back();
    expect_same_estimates(merged[0], whole, true);
    EXPECT_EQ(merged[0]["probe"], "edge-1");
    EXPECT_EQ(merged[0]["kind"], "final");
    // One stream's lifecycle, cut at interval boundaries: its counts add up
    // to the run's (expired and its error are sums of floating-point terms).
    EXPECT_EQ(merged[0]["flows"]["new"], whole["flows"]["new"]);
    EXPECT_EQ(merged[0]["flows"]["ended"], whole["flows"]["ended"]);
    EXPECT_EQ(merged[0]["flows"]["active"], whole["flows"]["active"]);
    EXPECT_NEAR(merged[0]["flows"]["expired"].get<double>(), whole["flows"]["expired"].get<double>(), 1e-6);
    // The span: the intervals' aligned bounds, not the first and last packet.
    EXPECT_LE(merged[0]["start"].get<double>(), whole["start"].get<double>());
    EXPECT_GE(merged[0]["end"].get<double>(), whole["end"].get<double>());

    // Each interval alone: the report the run printed for it.
    for (std::size_t i = 0; i + 1 < reports.size(); ++i) {
        const RunResult one = run_flowsketch("merge --interval 10 --format json " + files[i]);
        ASSERT_EQ(one.exit_code, 0) << one.err;
        const json back = json::parse(one.out);
        expect_same_estimates(back, reports[i], true);
        EXPECT_EQ(back["start"], reports[i]["start"]);
        EXPECT_EQ(back["end"], reports[i]["end"]);
        EXPECT_EQ(back["flows"], reports[i]["flows"]);
    }

    // Re-bucketed to 30 s: the same as a run with 30-second intervals.
    const RunResult rebucket = run_flowsketch("merge --interval 30 --format json" + joined(files));
    ASSERT_EQ(rebucket.exit_code, 0) << rebucket.err;
    const RunResult run30 = run_flowsketch("-r " + trace() + " --interval 30 --probe edge-1 " + measure_options);
    std::vector<json> expected = json_lines(run30.out);
    expected.pop_back();
    const std::vector<json> got = json_lines(rebucket.out);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        expect_same_estimates(got[i], expected[i], true);
        EXPECT_EQ(got[i]["start"], expected[i]["start"]);
        EXPECT_EQ(got[i]["end"], expected[i]["end"]);
    }
}

TEST(SnapshotMerge, TwoProbesOnASplitCaptureMergeIntoTheWholeRun) {
    const std::string dir = fresh_dir("snapshots-by-packet");
    const std::string even = tmp_path("snapshot-even.pcap");
    const std::string odd = tmp_path("snapshot-odd.pcap");
    split_pcap(trace(), even, 0);
    split_pcap(trace(), odd, 1);
    for (const auto& [probe, part] : {std::pair{"uplink-a", even}, std::pair{"uplink-b", odd}}) {
        const RunResult run = run_flowsketch("-r " + part + " --interval 0 --probe " + probe + " --snapshot-dir " +
                                             dir + " " + measure_options);
        ASSERT_EQ(run.exit_code, 0) << run.err;
    }
    const std::vector<std::string> files = files_in(dir);
    ASSERT_EQ(files.size(), 2u);
    EXPECT_NE(files[0].find("uplink-a-"), std::string::npos);
    EXPECT_NE(files[0].find("-run.fsnap"), std::string::npos);

    const RunResult whole_run = run_flowsketch("-r " + trace() + " --interval 0 --probe all " + measure_options);
    ASSERT_EQ(whole_run.exit_code, 0) << whole_run.err;
    const json whole = json::parse(whole_run.out);
    const RunResult merge = run_flowsketch("merge --format json" + joined(files));
    ASSERT_EQ(merge.exit_code, 0) << merge.err;
    const json merged = json::parse(merge.out);
    expect_same_estimates(merged, whole, false);
    EXPECT_EQ(merged["probe"], "uplink-a,uplink-b");
    // Every flow of the trace is seen by both probes: each counts it new.
    const json& flows = merged["flows"];
    EXPECT_GE(flows["new"].get<std::uint64_t>(), whole["flows"]["new"].get<std::uint64_t>());
    EXPECT_LE(flows["new"].get<std::uint64_t>(), 2 * whole["flows"]["new"].get<std::uint64_t>());

    // Files given in any order: the same report.
    const RunResult reversed = run_flowsketch("merge --format json " + files[1] + " " + files[0]);
    EXPECT_EQ(reversed.out, merge.out);
}

// Each refusal: exit 1, one line on stderr naming the file(s) and the
// problem, nothing on standard output.
void expect_refused(const std::string& args, const std::vector<std::string>& mentions) {
    const RunResult merge = run_flowsketch("merge " + args);
    EXPECT_EQ(merge.exit_code, 1) << args;
    EXPECT_EQ(merge.out, "") << args;
    EXPECT_EQ(lines_of(merge.err).size(), 1u) << merge.err;
    for (const std::string& text : mentions) EXPECT_NE(merge.err.find(text), std::string::npos) << merge.err;
}

TEST(SnapshotMerge, DamagedForeignAndMismatchedFilesAreRefusedWhole) {
    const std::string dir = fresh_dir("snapshots-refused");
    const std::string small = tmp_path("snapshot-small.pcap");
    split_pcap(trace(), small, 0);
    const auto take = [&](const std::string& name, const std::string& options) {
        const std::string sub = dir + "/" + name;
        const RunResult run =
            run_flowsketch("-r " + small + " --interval 0 --no-flows --probe p --snapshot-dir " + sub + " " + options);
        if (run.exit_code != 0) throw std::runtime_error(run.err);
        return files_in(sub).at(0);
    };
    const std::string good = take("good", "");
    const std::string other_seed = take("seed", "--seed 0x1234");
    const std::string other_width = take("width", "--width 5003");

    const std::string truncated = dir + "/truncated.fsnap";
    fs::copy_file(good, truncated);
    fs::resize_file(truncated, fs::file_size(good) - 100);
    const std::string flipped = dir + "/flipped.fsnap";
    std::string bytes = read_file(good);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x04);
    std::ofstream(flipped, std::ios::binary) << bytes;

    expect_refused(good + " " + truncated, {truncated, "truncated"});
    expect_refused(flipped, {flipped, "checksum mismatch"});
    expect_refused(good + " " + small, {small, "not a flowsketch snapshot"});
    expect_refused(good + " " + other_seed, {good, other_seed, "seed 0x666c6f77736b7463 vs 0x0000000000001234"});
    expect_refused(good + " " + other_width, {good, other_width, "width"});
    expect_refused(good + " " + good, {"overlap"});
    expect_refused(dir + "/missing.fsnap", {"missing.fsnap", "No such file"});
}

TEST(SnapshotMerge, AFailedWriteIsSaidAndCountedAndTheRunGoesOn) {
    const std::string dir = fresh_dir("snapshots-failing");
    // A directory where the first interval's temporary file would go.
    fs::create_directory(dir + "/.edge-1-20231114T221320.000Z-interval.fsnap.tmp");
    const RunResult run = run_flowsketch("-r " + trace() + " --interval 10 --probe edge-1 --snapshot-dir " + dir +
                                         " --format json");
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_EQ(json_lines(run.out).size(), 8u);  // every report was written
    const std::vector<std::string> errors = lines_of(run.err);
    ASSERT_EQ(errors.size(), 2u) << run.err;
    EXPECT_NE(errors[0].find("cannot write snapshot"), std::string::npos) << errors[0];
    EXPECT_NE(errors[1].find("1 of 7 snapshots could not be written"), std::string::npos) << errors[1];
    EXPECT_EQ(files_in(dir).size(), 7u);  // six written, and the obstacle
}

TEST(SnapshotMerge, ReportsNameTheProbeAndTheSeed) {
    const RunResult text = run_flowsketch("-r " + trace() + " --interval 0 --probe edge-1 --seed 0x2a --top 2");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("\n  probe edge-1   seed 0x000000000000002a\n"), std::string::npos) << text.out;
    const RunResult csv = run_flowsketch("-r " + trace() + " --interval 0 --probe edge-1 --top 1 --format csv");
    const std::vector<std::string> rows = csv_heavy_hitter_lines(csv.out);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_TRUE(rows[0].ends_with(",probe,seed,metric,value,vlan,vni,tunnel"));
    EXPECT_TRUE(rows[1].ends_with(",edge-1,0x666c6f77736b7463,,,,,")) << rows[1];
    const RunResult bad = run_flowsketch("-r " + trace() + " --probe 'a b'");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(lines_of(bad.err).size(), 1u);
}

}  // namespace
}  // namespace flowsketch::testing
