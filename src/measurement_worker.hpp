// `--threads 2`: the sketches are updated on a thread of their own while the
// calling thread reads, decodes and locates (hashes each key and computes its
// sketch columns and lifecycle probes: FlowMeasurement::prepare). Batches pass
// through a short bounded queue in order, so the measurement sees exactly the
// packet sequence a single thread would: the reports are identical.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/flow_measurement.hpp"

namespace flowsketch::app {

class MeasurementWorker {
public:
    /// Starts the thread. `measurement` must outlive the worker and, between
    /// submit() and drain(), must not be touched by anyone else.
    explicit MeasurementWorker(core::FlowMeasurement& measurement);
    ~MeasurementWorker();
    MeasurementWorker(const MeasurementWorker&) = delete;
    MeasurementWorker& operator=(const MeasurementWorker&) = delete;

    struct Batch {
        std::vector<core::PacketRecord> packets;
        core::FlowMeasurement::PreparedBatch prepared;  // of packets
    };
    /// An emptied batch to fill next (its buffers keep their capacity).
    Batch take_spare();
    /// Queues a batch (waits while the queue is full).
    void submit(Batch batch);
    /// Returns once every submitted batch is in the measurement.
    void drain();

private:
    void run();

    static constexpr std::size_t max_queued = 4;
    core::FlowMeasurement& measurement_;
    std::mutex mutex_;
    std::condition_variable work_ready_;  // worker waits: queue empty
    std::condition_variable space_ready_; // producer waits: queue full or not drained
    std::deque<Batch> queue_;
    std::vector<Batch> spare_;  // added batches, for reuse
    bool busy_ = false;  // the worker is adding a batch it took off the queue
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace flowsketch::app
