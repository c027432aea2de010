#include "reports/format_registry.hpp"

#include <stdexcept>

namespace flowsketch::reports {
namespace {

std::vector<FormatEntry>& registry() {
    static std::vector<FormatEntry> formats = {text_format(), json_format(), csv_format()};
    return formats;
}

class FormattedWriter final : public ReportWriter {
public:
    FormattedWriter(std::unique_ptr<ReportFormat> format, ReportOutput& output)
        : format_(std::move(format)), output_(output) {
        write_bytes(format_->begin(output_.was_empty()));
    }
    void write(const Report& report) override { write_bytes(format_->render(report)); }
    void finish() override { write_bytes(format_->finish()); }

private:
    void write_bytes(const std::string& bytes) {
        if (!bytes.empty()) output_.write(bytes);
    }
    std::unique_ptr<ReportFormat> format_;
    ReportOutput& output_;
};

class TeeWriter final : public ReportWriter {
public:
    explicit TeeWriter(std::vector<std::unique_ptr<ReportWriter>> writers) : writers_(std::move(writers)) {}
    void write(const Report& report) override {
        for (auto& writer : writers_) writer->write(report);
    }
    void finish() override {
        for (auto& writer : writers_) writer->finish();
    }

private:
    std::vector<std::unique_ptr<ReportWriter>> writers_;
};

}  // namespace

const std::vector<FormatEntry>& report_formats() { return registry(); }

void add_report_format(FormatEntry entry) {
    for (const FormatEntry& known : registry()) {
        if (known.name == entry.name) throw std::invalid_argument("report format '" + entry.name + "' exists");
    }
    registry().push_back(std::move(entry));
}

std::vector<std::string> report_format_names() {
    std::vector<std::string> names;
    for (const FormatEntry& entry : registry()) names.push_back(entry.name);
    return names;
}

std::unique_ptr<ReportWriter> make_report_writer(std::string_view format, ReportOutput& output) {
    for (const FormatEntry& entry : registry()) {
        if (entry.name == format) return std::make_unique<FormattedWriter>(entry.make(), output);
    }
    std::string known;
    for (const FormatEntry& entry : registry()) known += (known.empty() ? "" : ", ") + entry.name;
    throw std::invalid_argument("unknown report format '" + std::string(format) + "' (known: " + known + ")");
}

std::unique_ptr<ReportWriter> make_tee_writer(std::vector<std::unique_ptr<ReportWriter>> writers) {
    return std::make_unique<TeeWriter>(std::move(writers));
}

}  // namespace flowsketch::reports
