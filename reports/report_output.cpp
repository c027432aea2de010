#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "reports/report_output.hpp"

namespace flowsketch::reports {

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

}  // namespace flowsketch::reports
