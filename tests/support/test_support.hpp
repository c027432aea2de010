// Shared helpers for end-to-end tests: run the binary, read truth files.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace flowsketch::testing {

inline std::string pcap_path(const std::string& name) { return std::string(FLOWSKETCH_PCAP_DIR) + "/" + name; }
/// A file under the tests' scratch directory. ctest runs the core and app
/// tests a second time with FLOWSKETCH_SIMD set, alongside the first: those
/// runs get a directory of their own, so a test and its copy never share a file.
inline std::string tmp_path(const std::string& name) {
    static const std::string dir = [] {
        const char* level = std::getenv("FLOWSKETCH_SIMD");
        if (level == nullptr || *level == '\0') return std::string(FLOWSKETCH_TEST_TMP);
        std::string own = std::string(FLOWSKETCH_TEST_TMP) + "/simd-" + level;
        ::mkdir(own.c_str(), 0755);  // EEXIST from another test is fine
        return own;
    }();
    return dir + "/" + name;
}

struct RunResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

/// Runs `flowsketch ARGS` through the shell; stdout and stderr are captured
/// through files (names unique per call) so both can be inspected.
/// With `input`, the command's standard input is a pipe that `cat input` writes.
inline RunResult run_flowsketch(const std::string& args, const std::string& input = "") {
    static int counter = 0;
    const std::string base = tmp_path("run-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    const std::string command = (input.empty() ? "" : "cat " + input + " | ") +
                                std::string(FLOWSKETCH_BINARY) + " " + args + " >" + base + ".out 2>" + base + ".err";
    const int status = std::system(command.c_str());
    RunResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_file(base + ".out");
    result.err = read_file(base + ".err");
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    return result;
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) lines.push_back(line);
    }
    return lines;
}

/// The fields of one CSV line (RFC 4180: a quoted field may hold commas).
inline std::vector<std::string> split_csv(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (const char c : line) {
        if (c == '"') {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            fields.emplace_back();
        } else {
            fields.back().push_back(c);
        }
    }
    return fields;
}

/// A CSV report's header and heavy-hitter rows, without its `total` rows.
inline std::vector<std::string> csv_heavy_hitter_lines(const std::string& csv) {
    std::vector<std::string> kept;
    for (const std::string& line : lines_of(csv)) {
        std::size_t comma = 0;
        for (int field = 0; field < 3 && comma != std::string::npos; ++field) comma = line.find(',', comma + 1);
        if (comma == std::string::npos || line.compare(comma + 1, 6, "total,") != 0) kept.push_back(line);
    }
    return kept;
}

/// (proto, src, dst, sport, dport) as text, the way reports and truth files print them.
using TruthKey = std::tuple<int, std::string, std::string, int, int>;

struct TruthFlow {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
};

struct Truth {
    std::map<std::string, std::uint64_t> totals;  // "# name value" comment lines
    std::map<TruthKey, TruthFlow> flows;
};

/// Reads a truth TSV (pcaps/*.truth.tsv or `flowsketch gen --truth`).
inline Truth read_truth(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open truth file " + path);
    Truth truth;
    bool header_seen = false;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (line[0] == '#') {
            std::istringstream fields(line.substr(1));
            std::string name;
            std::string value;
            if (fields >> name >> value && value.find_first_not_of("0123456789") == std::string::npos) {
                truth.totals[name] = std::stoull(value);
            }
            continue;
        }
        if (!header_seen) {
            header_seen = true;  // proto src dst sport dport packets bytes
            continue;
        }
        std::istringstream fields(line);
        int proto = 0, sport = 0, dport = 0;
        std::string src, dst;
        TruthFlow flow;
        fields >> proto >> src >> dst >> sport >> dport >> flow.packets >> flow.bytes;
        truth.flows[TruthKey{proto, src, dst, sport, dport}] = flow;
    }
    return truth;
}

}  // namespace flowsketch::testing
