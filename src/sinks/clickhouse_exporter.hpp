// --clickhouse: exports each closed window (its snapshot: sketch rows,
// candidates, totals) to ClickHouse on a thread of its own, so a slow or
// absent server never stalls the capture. Windows wait in a bounded queue;
// failed inserts are retried with exponential backoff; a window the full
// queue pushes out, or that is still undelivered at the end, is written to
// the spill directory as an ordinary snapshot (when --snapshot-dir is set)
// and counted as undelivered either way, never dropped silently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "reports/report.hpp"
#include "reports/snapshot.hpp"
#include "src/sinks/clickhouse_http.hpp"
#include "src/sinks/clickhouse_rows.hpp"
#include "src/sinks/snapshot_pool.hpp"
#include "src/sinks/snapshot_writer.hpp"

namespace flowsketch::app {

struct ClickHouseExporterOptions {
    ClickHouseEndpoint endpoint;
    /// Windows waiting for delivery (beside the one being delivered). A
    /// window that finds them all taken pushes the oldest out: it is spilled.
    std::size_t queue = 16;
    /// Replays: a window that finds the queue full waits for a free place
    /// while ClickHouse takes windows (packet time does not outrun it), and
    /// pushes the oldest out only while deliveries fail. Live capture never
    /// waits.
    bool wait_when_full = false;
    std::chrono::milliseconds timeout{5000};  // per HTTP exchange
    std::chrono::milliseconds first_backoff{100};
    std::chrono::milliseconds max_backoff{5000};
    /// How long finish() keeps trying what is queued, since the last
    /// successful delivery, before spilling it.
    std::chrono::milliseconds finish_grace{10000};
    /// Where undelivered windows go as snapshot files (empty: nowhere, they
    /// are only counted).
    std::string spill_directory;
    bool sync_spills = true;  // fsync each spilled file (live capture)
    /// Where delivered (and spilled) snapshots go to be filled again (none if null).
    SnapshotPool* pool = nullptr;
};

class ClickHouseExporter {
public:
    /// Windows per insert: at the defaults 8 windows are 6 MB of sketch rows,
    /// one insert well within the default timeout.
    static constexpr std::size_t max_batch_windows = 8;

    /// Creates the spill directory when one is given; throws
    /// std::runtime_error if it cannot be used.
    explicit ClickHouseExporter(ClickHouseExporterOptions options);
    ~ClickHouseExporter();
    ClickHouseExporter(const ClickHouseExporter&) = delete;
    ClickHouseExporter& operator=(const ClickHouseExporter&) = delete;

    /// Queues a window (from the measuring thread); never waits.
    void submit(reports::Snapshot snapshot);
    /// Delivers what is queued (retrying for finish_grace at most), spills
    /// the rest, and stops the thread.
    void finish();

    /// What has happened so far (for the reports and the final status).
    reports::ClickHouseExportCounts counts() const;
    const ClickHouseExporterOptions& options() const noexcept { return options_; }

private:
    /// Windows delivered together: one INSERT per table for all of them
    /// (ClickHouse takes few large inserts much faster than many small ones).
    struct Batch {
        std::vector<reports::Snapshot> windows;
        ClickHouseRows rows;    // the windows' rows, one after the other (memory kept from batch to batch)
        bool encoded = false;   // rows holds the windows' rows
        unsigned inserted = 0;  // tables already holding them, in insert order
    };

    void run();
    void deliver(Batch& batch);  // throws ClickHouseError; resumes after the inserts that succeeded
    void give_up(reports::Snapshot snapshot, const std::string& why);  // spill or count it
    void say(const std::string& message) const;

    ClickHouseExporterOptions options_;
    ClickHouseClient client_;
    std::unique_ptr<SnapshotWriter> spill_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<reports::Snapshot> queue_;
    std::size_t in_flight_ = 0;  // windows of the batch being delivered
    bool stopping_ = false;
    std::chrono::steady_clock::time_point stop_deadline_{};
    reports::ClickHouseExportCounts counts_;
    bool failing_ = false;  // the last attempt failed (the outage was announced)
    std::thread thread_;    // last: starts once the members above exist
};

}  // namespace flowsketch::app
