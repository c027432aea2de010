// A file descriptor reports are written to, whole: each write(2) loop
// finishes a report or throws naming the output, so a reader tailing a file
// never sees half a report (a JSON line is whole or absent).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace flowsketch::reports {

class ReportOutput {
public:
    /// Standard output (not closed).
    static std::unique_ptr<ReportOutput> standard_output();
    /// Opens `path` for appending (created 0644 if missing; O_APPEND, so
    /// concurrent appenders never interleave inside a report). Throws
    /// std::runtime_error naming the path.
    static std::unique_ptr<ReportOutput> append_to(const std::string& path);
    ~ReportOutput();
    ReportOutput(const ReportOutput&) = delete;
    ReportOutput& operator=(const ReportOutput&) = delete;

    /// Writes all of `bytes` (disk full, closed pipe...: std::runtime_error naming the output).
    void write(std::string_view bytes);
    /// Reopens a file output by its path (after log rotation moved it; SIGHUP).
    /// Standard output is left as it is. Throws std::runtime_error naming the path.
    void reopen();
    const std::string& name() const noexcept { return name_; }
    /// True if the output held nothing when opened (a CSV header is due).
    bool was_empty() const noexcept { return was_empty_; }

private:
    ReportOutput(int fd, std::string name, bool owned, bool was_empty);
    static int open_append(const std::string& path);
    int fd_;
    std::string name_;
    bool owned_;
    bool was_empty_;
};

}  // namespace flowsketch::reports
