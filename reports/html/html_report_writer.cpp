#include "reports/html/html_report_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace flowsketch::reports::html {
namespace {

std::runtime_error failure(const std::string& path, const char* what) {
    return std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

unsigned file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666U & ~static_cast<unsigned>(mask);
}

// A temporary file beside `path` (same filesystem, so rename is atomic).
int make_temporary(const std::string& path, std::string& name) {
    name = path + ".XXXXXX";
    std::vector<char> pattern(name.begin(), name.end());
    pattern.push_back('\0');
    const int fd = ::mkstemp(pattern.data());
    name.assign(pattern.data());
    return fd;
}

}  // namespace

HtmlReportWriter::HtmlReportWriter(std::string path, RunDescription run, std::size_t history_capacity)
    : path_(std::move(path)), run_(std::move(run)), history_(history_capacity), mode_(file_mode()) {
    std::string name;
    const int fd = make_temporary(path_, name);
    if (fd < 0) throw failure(path_, "cannot create a file beside it");
    ::close(fd);
    ::unlink(name.c_str());
    struct stat status {};
    if (::stat(path_.c_str(), &status) == 0 && S_ISDIR(status.st_mode)) {
        throw std::runtime_error(path_ + ": is a directory");
    }
}

void HtmlReportWriter::write(const Report& report) {
    if (report.kind == ReportKind::interval) {
        history_.add(report);
        last_interval_ = report;
    }
    replace_file(render_page(run_, history_, report, last_interval_ ? &*last_interval_ : nullptr));
}

void HtmlReportWriter::replace_file(const std::string& page) const {
    std::string name;
    const int fd = make_temporary(path_, name);
    if (fd < 0) throw failure(path_, "cannot create a file beside it");
    std::string_view left = page;
    while (!left.empty()) {
        const ssize_t written = ::write(fd, left.data(), left.size());
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
            const std::runtime_error error = failure(name, "cannot write");
            ::close(fd);
            ::unlink(name.c_str());
            throw error;
        }
        left.remove_prefix(static_cast<std::size_t>(written));
    }
    const bool mode_set = ::fchmod(fd, static_cast<mode_t>(mode_)) == 0;
    if (::close(fd) != 0 || !mode_set) {
        const std::runtime_error error = failure(name, "cannot write");
        ::unlink(name.c_str());
        throw error;
    }
    if (::rename(name.c_str(), path_.c_str()) != 0) {
        const std::runtime_error error = failure(path_, "cannot replace");
        ::unlink(name.c_str());
        throw error;
    }
}

}  // namespace flowsketch::reports::html
