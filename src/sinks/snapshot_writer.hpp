// --snapshot-dir: writes each closed window's snapshot to a file on a thread
// of its own, so compression, fsync and a slow disk never stall the capture.
// Each file appears whole or not at all (temporary file, fsync, rename, fsync
// of the directory); a failed write is said on stderr, counted, and the run
// goes on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "reports/snapshot.hpp"
#include "src/sinks/snapshot_pool.hpp"

namespace flowsketch::app {

struct SnapshotWriterOptions {
    std::string directory;
    /// Snapshots waiting to be written. When they are all taken, a replay
    /// waits (packet time does not run away); a live capture drops the
    /// snapshot, counted as a failure, rather than stall the capture.
    std::size_t queue = 4;
    bool wait_when_full = true;
    reports::SnapshotCompression compression = reports::SnapshotCompression::zstd;
    /// true: each file is fsync'ed before its rename and the directory after
    /// it (live capture: a file survives a crash once it has its name). false
    /// (replays, which can be run again): renamed without waiting for the
    /// disk, and the file system synced once by finish(); an fsync per file
    /// would bound a replay to the disk's fsyncs per second.
    bool sync_each = true;
    /// Where written snapshots go to be filled again (none if null).
    SnapshotPool* pool = nullptr;
};

class SnapshotWriter {
public:
    /// Creates the directory if it is missing (one level); throws
    /// std::runtime_error naming it if it cannot be used.
    explicit SnapshotWriter(SnapshotWriterOptions options);
    ~SnapshotWriter();
    SnapshotWriter(const SnapshotWriter&) = delete;
    SnapshotWriter& operator=(const SnapshotWriter&) = delete;

    /// Queues a snapshot (from the measuring thread).
    void submit(reports::Snapshot snapshot);
    /// Writes what is queued and stops the thread; without sync_each, syncs
    /// the file system holding the directory.
    void finish();
    /// The final sync's error ("" if none, or none was needed).
    const std::string& sync_error() const noexcept { return sync_error_; }

    std::uint64_t written() const;
    std::uint64_t failed() const;

private:
    void run();
    void write(const reports::Snapshot& snapshot);
    void note_failure(const std::string& message);

    SnapshotWriterOptions options_;
    int directory_fd_ = -1;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<reports::Snapshot> queue_;
    bool stopping_ = false;
    std::uint64_t written_ = 0;
    std::uint64_t failed_ = 0;
    std::string sync_error_;
    std::thread thread_;  // last: starts once the members above exist
};

}  // namespace flowsketch::app
