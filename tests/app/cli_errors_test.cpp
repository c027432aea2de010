// Bad input ends with one line on stderr naming what is wrong, and the exit
// code says whose fault it is: 1 runtime (file), 2 usage (option, filter).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

void expect_one_line_naming(const RunResult& run, const std::string& name) {
    EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
    EXPECT_NE(run.err.find(name), std::string::npos) << run.err;
    EXPECT_EQ(run.out, "") << "no report before the error";
}

TEST(CliErrors, MissingFileIsRuntimeError) {
    const RunResult run = run_flowsketch("-r /nonexistent/capture.pcap");
    EXPECT_EQ(run.exit_code, 1);
    expect_one_line_naming(run, "/nonexistent/capture.pcap");
}

// libpcap's message names the file already: the line says it once.
TEST(CliErrors, MissingFileIsNamedOnce) {
    const RunResult run = run_flowsketch("-r /nonexistent/capture.pcap");
    const std::string name = "/nonexistent/capture.pcap";
    const std::size_t first = run.err.find(name);
    ASSERT_NE(first, std::string::npos) << run.err;
    EXPECT_EQ(run.err.find(name, first + 1), std::string::npos) << run.err;
}

// A value that is not a number is not "out of range": the message says which.
TEST(CliErrors, OptionValueMessagesNameWhatIsWrong) {
    const std::string input = "-r " + pcap_path("pcapplusplus-sll.pcap");
    const RunResult word = run_flowsketch(input + " --epsilon abc");
    EXPECT_EQ(word.exit_code, 2);
    expect_one_line_naming(word, "--epsilon: 'abc' is not a number");
    const RunResult whole = run_flowsketch(input + " --top 2.5");
    EXPECT_EQ(whole.exit_code, 2);
    expect_one_line_naming(whole, "--top: '2.5' is not a whole number");
    const RunResult range = run_flowsketch(input + " --epsilon 0.7");
    EXPECT_EQ(range.exit_code, 2);
    expect_one_line_naming(range, "--epsilon: 0.7 is out of range: it must lie in [1e-07, 0.5]");
}

// `-r A B` makes B a filter, as in tcpdump; the error says what was meant.
TEST(CliErrors, SecondFileAfterOneReadOptionGetsAHint) {
    const std::string a = pcap_path("pcapplusplus-sll.pcap");
    const std::string b = pcap_path("zeek-mixed-vlan-mpls.pcap");
    const RunResult run = run_flowsketch("-r " + a + " " + b);
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "give each capture file its own -r");
    EXPECT_EQ(run_flowsketch("-r " + a + " -r " + b).exit_code, 0);
}

// The help shows -r FILE as it is parsed: one file per -r.
TEST(CliErrors, HelpShowsOneFilePerReadOption) {
    const RunResult run = run_flowsketch("--help");
    EXPECT_NE(run.out.find("-r,--read FILE "), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("-r,--read FILE ..."), std::string::npos) << run.out;
}

TEST(CliErrors, FileThatIsNotACaptureIsRuntimeError) {
    const std::string path = pcap_path("SOURCES.md");
    const RunResult run = run_flowsketch("-r " + path);
    EXPECT_EQ(run.exit_code, 1);
    expect_one_line_naming(run, "SOURCES.md");
}

TEST(CliErrors, BadFilterIsUsageErrorNamingTheExpression) {
    const RunResult run = run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") + " tcp port bogus");
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "tcp port bogus");
}

TEST(CliErrors, BadOptionValueIsUsageError) {
    const RunResult run = run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") + " --epsilon 3");
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "epsilon");
}

// KM at δ = 1e-12 needs 8.2 GiB (its full-collision term); refused before
// anything is allocated, pointing at the standard scheme's few MiB.
TEST(CliErrors, SketchAboveMaxMemoryIsUsageErrorWithTheWayOut) {
    const RunResult run = run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") + " --delta 1e-12");
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "--max-memory 1.0 GiB");
    EXPECT_NE(run.err.find("GiB), the seen filter (12.0 MiB), the heavy-hitter candidates"),
              std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("--cms standard meets the same"), std::string::npos) << run.err;
}

TEST(CliErrors, SeenFilterAboveMaxMemoryNamesMaxFlows) {
    const RunResult run =
        run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") + " --max-flows 1000000000");
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "lower --max-flows");
}

TEST(CliErrors, MaxMemoryTakesUnitsAndBindsBothWays) {
    const std::string input = "-r " + pcap_path("pcapplusplus-sll.pcap");
    // The default state (1.4 MiB sketch, 12 MiB seen filter) fits in 16 MiB, not in 8.
    EXPECT_EQ(run_flowsketch(input + " --max-memory 16MiB").exit_code, 0);
    const RunResult small = run_flowsketch(input + " --max-memory 8MiB");
    EXPECT_EQ(small.exit_code, 2);
    expect_one_line_naming(small, "--max-memory 8.0 MiB");
    // The standard scheme meets a δ km cannot afford within the default limit.
    EXPECT_EQ(run_flowsketch(input + " --delta 1e-12 --cms standard").exit_code, 0);
    const RunResult bad = run_flowsketch(input + " --max-memory lots");
    EXPECT_EQ(bad.exit_code, 2);
    expect_one_line_naming(bad, "max-memory");
}

// The lifecycle's options mean nothing without it: naming one with
// --no-flows is a mistake to report, not to ignore.
TEST(CliErrors, NoFlowsRefusesTheLifecycleOptions) {
    const std::string input = "-r " + pcap_path("pcapplusplus-sll.pcap") + " --no-flows ";
    for (const char* option : {"--idle-timeout 30", "--max-flows 1000", "--flow-fpr 0.01",
                               "--seen-filter standard", "--generations 4"}) {
        const RunResult run = run_flowsketch(input + option);
        EXPECT_EQ(run.exit_code, 2) << option;
        expect_one_line_naming(run, "--no-flows");
    }
    // Without the seen filter the sketch (2.1 MiB: four lanes and the previous
    // interval's two) and the rest (0.6 MiB) count.
    EXPECT_EQ(run_flowsketch(input + "--max-memory 3MiB").exit_code, 0);
    const RunResult small = run_flowsketch(input + "--max-memory 1MiB");
    EXPECT_EQ(small.exit_code, 2);
    expect_one_line_naming(small, "the Count-Min sketch (11299 x 4 cells: 2.1 MiB), the heavy-hitter "
                                  "candidates (29.3 KiB) and the caches (");
    EXPECT_NE(small.err.find("KiB) need 2.7 MiB, above --max-memory 1.0 MiB"), std::string::npos)
        << small.err;
    // --cms standard (704 KiB) would not fit 1 MiB beside the rest: not offered.
    EXPECT_EQ(small.err.find("--cms standard"), std::string::npos) << small.err;
}

// The candidate sets grow with --top (four sets of 4·top flows): at the
// largest --top they are the biggest part, and the error says what to lower.
TEST(CliErrors, CandidatesCountAgainstMaxMemory) {
    const std::string input = "-r " + pcap_path("pcapplusplus-sll.pcap") + " --top 10000";
    EXPECT_EQ(run_flowsketch(input + " --max-memory 36MiB").exit_code, 0);
    const RunResult run = run_flowsketch(input + " --max-memory 20MiB");
    EXPECT_EQ(run.exit_code, 2);
    // Four candidate sets (each candidate with its exact counts), and the previous interval's candidate keys.
    expect_one_line_naming(run, "the heavy-hitter candidates (20.0 MiB)");
    EXPECT_NE(run.err.find("need 34.7 MiB, above --max-memory 20.0 MiB; lower --top"), std::string::npos)
        << run.err;
    // The caches are the one part no option sizes: the error says so.
    const RunResult tiny = run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") +
                                          " --no-flows --width 100 --depth 1 --max-memory 100KiB");
    EXPECT_EQ(tiny.exit_code, 2);
    expect_one_line_naming(tiny, "the caches alone exceed it");
}

TEST(CliErrors, UnknownFormatIsUsageError) {
    const RunResult run = run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") + " --format xml");
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "format");
}

TEST(CliErrors, NoInputIsUsageError) {
    const RunResult run = run_flowsketch("--interval 5");
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "-r");
}

TEST(CliErrors, StandardInputTwiceIsUsageError) {
    const RunResult run = run_flowsketch("-r - -r -", pcap_path("pcapplusplus-sll.pcap"));
    EXPECT_EQ(run.exit_code, 2);
    expect_one_line_naming(run, "-r - (standard input)");
}

// Any two names of one pipe: each source would get part of its bytes.
TEST(CliErrors, OnePipeTwiceIsUsageError) {
    const RunResult both = run_flowsketch("-r - -r /dev/stdin", pcap_path("pcapplusplus-sll.pcap"));
    EXPECT_EQ(both.exit_code, 2);
    expect_one_line_naming(both, "-r - and -r /dev/stdin are the same pipe");

    const std::string fifo = tmp_path("named-twice");
    std::remove(fifo.c_str());
    ASSERT_EQ(std::system(("mkfifo " + fifo).c_str()), 0);
    const RunResult named = run_flowsketch("-r " + fifo + " -r " + fifo);  // refused before opening
    std::remove(fifo.c_str());
    EXPECT_EQ(named.exit_code, 2);
    expect_one_line_naming(named, "are the same pipe");
}

// From a pipe as from a file: what is not a capture is named (as stdin), and a
// capture cut short keeps its packets before the cut.
TEST(CliErrors, PipedInputIsCheckedAsAFileIs) {
    const RunResult junk = run_flowsketch("-r -", pcap_path("SOURCES.md"));
    EXPECT_EQ(junk.exit_code, 1);
    expect_one_line_naming(junk, "stdin: unknown file format");

    const std::string original = read_file(pcap_path("pcapplusplus-ipv6.pcapng"));
    const std::string path = tmp_path("piped-cut.pcapng");
    std::ofstream(path, std::ios::binary) << original.substr(0, original.size() - 7);
    const RunResult cut = run_flowsketch("-r - --interval 0 --format json", path);
    EXPECT_EQ(cut.exit_code, 0);
    EXPECT_NE(cut.err.find("stdin: truncated"), std::string::npos) << cut.err;
    ASSERT_EQ(lines_of(cut.out).size(), 1u);
    const auto report = nlohmann::json::parse(lines_of(cut.out).back());
    const auto whole = nlohmann::json::parse(
        lines_of(run_flowsketch("-r " + pcap_path("pcapplusplus-ipv6.pcapng") + " --interval 0 --format json").out)
            .back());
    EXPECT_EQ(report["packets"].get<std::uint64_t>() + 1, whole["packets"].get<std::uint64_t>());
}

TEST(CliErrors, BadFileAmongGoodOnesFailsBeforeAnyReport) {
    const RunResult run = run_flowsketch("-r " + pcap_path("pcapplusplus-sll.pcap") +
                                         " -r /nonexistent.pcap --format json");
    EXPECT_EQ(run.exit_code, 1);
    expect_one_line_naming(run, "/nonexistent.pcap");
}

// A capture cut mid-record: every packet before the cut is counted, the
// report says the file was truncated, stderr warns, exit code 0.
TEST(CliErrors, TruncatedFileKeepsPacketsBeforeTheCut) {
    const std::string original = read_file(pcap_path("suricata-verify-output-eve-ftp-data.pcap"));
    // Walk the classic pcap records (little-endian file) to find a cut point
    // in the middle of a record and the number of whole records before it.
    std::size_t offset = 24;
    std::uint64_t whole_records = 0;
    while (offset + 16 <= original.size() && offset < original.size() / 2) {
        std::uint32_t caplen = 0;
        std::memcpy(&caplen, original.data() + offset + 8, 4);
        offset += 16 + caplen;
        ++whole_records;
    }
    const std::size_t cut = offset + 16 + 5;  // 5 bytes into the next record's data
    const std::string path = tmp_path("cut-mid-record.pcap");
    std::ofstream(path, std::ios::binary) << original.substr(0, cut);

    const RunResult run = run_flowsketch("-r " + path + " --interval 0 --format json");
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_NE(run.err.find("truncated"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
    const auto lines = lines_of(run.out);
    ASSERT_EQ(lines.size(), 1u);
    const auto report = nlohmann::json::parse(lines.back());
    EXPECT_EQ(report.at("frames").get<std::uint64_t>(), whole_records);
    EXPECT_TRUE(report.at("truncated").get<bool>());
    EXPECT_EQ(report.at("warnings").size(), 1u);
}

}  // namespace
}  // namespace flowsketch::testing
