// The output files of `flowsketch gen` (capture and truth): a file written
// through a 1 MiB buffer, with write errors reported as exceptions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowsketch::gen {

/// Output file written in 1 MiB write() calls.
class BufferedFile {
  public:
    static constexpr std::size_t buffer_size = std::size_t{1} << 20;
    /// Creates or truncates `path`. Throws std::runtime_error naming the file.
    explicit BufferedFile(std::string path);
    ~BufferedFile();
    BufferedFile(const BufferedFile&) = delete;
    BufferedFile& operator=(const BufferedFile&) = delete;

    /// Space for n bytes (n <= buffer_size) at the end of the buffer, already counted as written.
    std::uint8_t* append(std::size_t n);
    void append(std::string_view bytes);
    /// Flushes and closes; throws std::runtime_error on any write error.
    void close();

  private:
    void flush();
    std::string path_;
    int fd_ = -1;
    std::vector<std::uint8_t> buffer_;
    std::size_t used_ = 0;
};

}  // namespace flowsketch::gen
