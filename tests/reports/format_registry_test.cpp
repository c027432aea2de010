// The format registry: built-in formats by name, formats added by a program,
// and the writers' opening, per-report and closing parts.
#include "reports/format_registry.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace flowsketch::reports {
namespace {

class BracketFormat final : public ReportFormat {
public:
    std::string begin(bool output_was_empty) const override { return output_was_empty ? "[\n" : "[again\n"; }
    std::string render(const Report& report) const override { return std::string(kind_name(report.kind)) + "\n"; }
    std::string finish() const override { return "]\n"; }
};

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(FormatRegistry, BuiltInFormatsComeFirst) {
    const std::vector<std::string> names = report_format_names();
    ASSERT_GE(names.size(), 3u);
    EXPECT_EQ(names[0], "text");
    EXPECT_EQ(names[1], "json");
    EXPECT_EQ(names[2], "csv");
    for (const FormatEntry& entry : report_formats()) EXPECT_FALSE(entry.description.empty()) << entry.name;
}

TEST(FormatRegistry, AnAddedFormatWritesItsOpeningReportsAndClosing) {
    add_report_format({"bracket-test", "test format", [] { return std::make_unique<BracketFormat>(); }});
    EXPECT_THROW(add_report_format({"bracket-test", "again", [] { return std::make_unique<BracketFormat>(); }}),
                 std::invalid_argument);
    const std::string path = std::string(FLOWSKETCH_TEST_TMP) + "/format_registry_" + std::to_string(::getpid());
    ::unlink(path.c_str());
    for (int run = 0; run < 2; ++run) {
        auto output = ReportOutput::append_to(path);
        auto writer = make_report_writer("bracket-test", *output);
        Report report;
        writer->write(report);
        report.kind = ReportKind::final_report;
        writer->write(report);
        writer->finish();
    }
    EXPECT_EQ(read_file(path), "[\ninterval\nfinal\n]\n[again\ninterval\nfinal\n]\n");
    ::unlink(path.c_str());
}

TEST(FormatRegistry, AnUnknownFormatIsNamedWithTheKnownOnes) {
    auto output = ReportOutput::standard_output();
    try {
        make_report_writer("yaml", *output);
        ADD_FAILURE() << "accepted yaml";
    } catch (const std::invalid_argument& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("'yaml'"), std::string::npos) << message;
        EXPECT_NE(message.find("text, json, csv"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace flowsketch::reports
