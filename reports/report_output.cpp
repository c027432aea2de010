#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "reports/report_writer.hpp"

namespace flowsketch::reports {
namespace {

class FormattedWriter final : public ReportWriter {
public:
    FormattedWriter(ReportFormat format, ReportOutput& output) : format_(format), output_(output) {
        if (format_ == ReportFormat::csv && output_.was_empty()) output_.write(csv_header());
    }
    void write(const Report& report) override {
        switch (format_) {
            case ReportFormat::text: output_.write(to_text(report)); break;
            case ReportFormat::json: output_.write(to_json(report) + "\n"); break;
            case ReportFormat::csv: output_.write(to_csv_rows(report)); break;
        }
    }

private:
    ReportFormat format_;
    ReportOutput& output_;
};

class TeeWriter final : public ReportWriter {
public:
    explicit TeeWriter(std::vector<std::unique_ptr<ReportWriter>> writers) : writers_(std::move(writers)) {}
    void write(const Report& report) override {
        for (auto& writer : writers_) writer->write(report);
    }

private:
    std::vector<std::unique_ptr<ReportWriter>> writers_;
};

}  // namespace

ReportOutput::ReportOutput(int fd, std::string name, bool owned, bool was_empty)
    : fd_(fd), name_(std::move(name)), owned_(owned), was_empty_(was_empty) {}

ReportOutput::~ReportOutput() {
    if (owned_) ::close(fd_);
}

std::unique_ptr<ReportOutput> ReportOutput::standard_output() {
    return std::unique_ptr<ReportOutput>(new ReportOutput(STDOUT_FILENO, "standard output", false, true));
}

int ReportOutput::open_append(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
    return fd;
}

void ReportOutput::reopen() {
    if (!owned_) return;
    const int fd = open_append(name_);
    ::close(fd_);
    fd_ = fd;
}

std::unique_ptr<ReportOutput> ReportOutput::append_to(const std::string& path) {
    const int fd = open_append(path);
    struct stat info {};
    const bool empty = ::fstat(fd, &info) == 0 && info.st_size == 0;
    return std::unique_ptr<ReportOutput>(new ReportOutput(fd, path, true, empty));
}

void ReportOutput::write(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(name_ + ": " + std::strerror(errno));
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

std::unique_ptr<ReportWriter> make_report_writer(ReportFormat format, ReportOutput& output) {
    return std::make_unique<FormattedWriter>(format, output);
}

std::unique_ptr<ReportWriter> make_tee_writer(std::vector<std::unique_ptr<ReportWriter>> writers) {
    return std::make_unique<TeeWriter>(std::move(writers));
}

ReportFormat parse_report_format(std::string_view name) {
    if (name == "text") return ReportFormat::text;
    if (name == "json") return ReportFormat::json;
    if (name == "csv") return ReportFormat::csv;
    throw std::invalid_argument("unknown report format '" + std::string(name) + "'");
}

}  // namespace flowsketch::reports
