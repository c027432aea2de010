#include "src/sinks/snapshot_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/sinks/background_priority.hpp"

namespace flowsketch::app {
namespace {

std::string error_text(int error) { return std::strerror(error); }

// Writes all of `bytes`, retrying short writes and interrupted calls.
bool write_all(int fd, const std::vector<std::uint8_t>& bytes, int& error) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = n < 0 ? errno : ENOSPC;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

SnapshotWriter::SnapshotWriter(SnapshotWriterOptions options) : options_(std::move(options)) {
    const std::string& dir = options_.directory;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        throw std::runtime_error(fmt::format("--snapshot-dir {}: {}", dir, error_text(errno)));
    }
    directory_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory_fd_ < 0) throw std::runtime_error(fmt::format("--snapshot-dir {}: {}", dir, error_text(errno)));
    if (::faccessat(directory_fd_, ".", W_OK, 0) != 0) {
        const int error = errno;
        ::close(directory_fd_);
        throw std::runtime_error(fmt::format("--snapshot-dir {}: {}", dir, error_text(error)));
    }
    thread_ = std::thread([this] {
        lower_this_thread_priority();
        run();
    });
}

SnapshotWriter::~SnapshotWriter() {
    finish();
    if (directory_fd_ >= 0) ::close(directory_fd_);
}

void SnapshotWriter::submit(reports::Snapshot snapshot) {
    std::unique_lock lock(mutex_);
    if (queue_.size() >= options_.queue) {
        if (!options_.wait_when_full) {
            const std::string name = reports::snapshot_file_name(snapshot);
            lock.unlock();
            note_failure(fmt::format("snapshot {} dropped: {} snapshots are still being written", name,
                                     options_.queue));
            return;
        }
        changed_.wait(lock, [this] { return queue_.size() < options_.queue; });
    }
    queue_.push_back(std::move(snapshot));
    changed_.notify_all();
}

void SnapshotWriter::finish() {
    {
        std::unique_lock lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
        changed_.notify_all();
    }
    if (!thread_.joinable()) return;
    thread_.join();
    if (!options_.sync_each && written() > 0 && ::syncfs(directory_fd_) != 0) {
        sync_error_ = fmt::format("cannot sync the snapshots in {}: {}", options_.directory, error_text(errno));
    }
}

std::uint64_t SnapshotWriter::written() const {
    std::lock_guard lock(mutex_);
    return written_;
}

std::uint64_t SnapshotWriter::failed() const {
    std::lock_guard lock(mutex_);
    return failed_;
}

void SnapshotWriter::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything is written
        reports::Snapshot snapshot = std::move(queue_.front());
        queue_.pop_front();
        changed_.notify_all();  // a place is free
        lock.unlock();
        write(snapshot);
        if (options_.pool != nullptr) options_.pool->give_back(std::move(snapshot));
        lock.lock();
    }
}

void SnapshotWriter::note_failure(const std::string& message) {
    {
        std::lock_guard lock(mutex_);
        ++failed_;
    }
    std::fflush(stdout);
    fmt::print(stderr, "flowsketch: {}\n", message);
}

// Temporary file beside the final one (same file system, so rename is
// atomic: a reader sees the whole file under its name or none), then, with
// sync_each, fsync, rename, fsync of the directory: after a crash too the
// file is either whole under its name or absent.
void SnapshotWriter::write(const reports::Snapshot& snapshot) {
    const std::string name = reports::snapshot_file_name(snapshot);
    const std::string temporary = "." + name + ".tmp";
    const std::string shown = options_.directory + "/" + name;
    std::vector<std::uint8_t> bytes;
    try {
        bytes = reports::encode_snapshot(snapshot, options_.compression);
    } catch (const std::exception& e) {
        note_failure(fmt::format("cannot write snapshot {}: {}", shown, e.what()));
        return;
    }
    const int fd = ::openat(directory_fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        note_failure(fmt::format("cannot write snapshot {}: {}", shown, error_text(errno)));
        return;
    }
    int error = 0;
    bool ok = write_all(fd, bytes, error);
    if (ok && options_.sync_each && ::fsync(fd) != 0) {
        error = errno;
        ok = false;
    }
    if (::close(fd) != 0 && ok) {
        error = errno;
        ok = false;
    }
    if (ok && ::renameat(directory_fd_, temporary.c_str(), directory_fd_, name.c_str()) != 0) {
        error = errno;
        ok = false;
    }
    if (!ok) {
        ::unlinkat(directory_fd_, temporary.c_str(), 0);
        note_failure(fmt::format("cannot write snapshot {}: {}", shown, error_text(error)));
        return;
    }
    if (options_.sync_each) ::fsync(directory_fd_);  // the rename itself survives a crash
    std::lock_guard lock(mutex_);
    ++written_;
}

}  // namespace flowsketch::app
