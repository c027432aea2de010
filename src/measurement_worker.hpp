// `--threads 2`: the sketches are updated on a thread of their own while the
// calling thread reads and decodes. Batches pass through a short ring in
// order, so the measurement sees exactly the packet sequence a single thread
// would: the reports are identical.
//
// Hashing the keys (FlowMeasurement::prepare) goes to whichever side has time:
// the reader hashes a batch when the worker is behind (batches waiting in the
// ring), and leaves it to the worker otherwise. On steady traffic (trace a) the
// reader is the slower side and the worker idles half the time; under a flood
// (trace b) it is the other way round. Either way the hashes are the same.
//
// Each side spins for a while before it sleeps when the ring is empty (worker)
// or full (reader). The two sides run at nearly the same rate, so one of them
// waits every few batches; sleeping on a condition variable there cost 0.6 ms
// per wait on this virtual machine (the idle vCPU has to be woken by the host),
// which made the pair take 1.97 s where either side alone needs 1.2 s.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
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
        core::FlowMeasurement::PreparedBatch prepared;  // of packets, when `hashed`
        bool hashed = false;  // false: the worker hashes the keys itself
    };
    /// An emptied batch to fill next (its buffers keep their capacity).
    /// Only the submitting thread calls take_spare(), submit() and drain().
    Batch take_spare();
    /// Queues a batch (waits while the ring is full).
    void submit(Batch batch);
    /// Returns once every submitted batch is in the measurement.
    void drain();
    /// True when batches wait in the ring: the worker is the slower side, so
    /// the submitter should hash the next batch itself.
    bool behind() const noexcept {
        return submitted_.load(std::memory_order_relaxed) -
                   added_.load(std::memory_order_relaxed) >= behind_batches;
    }

private:
    void run();

    static constexpr std::uint32_t ring_size = 8;
    // Batches queued (the one being added included) from which the worker counts as behind.
    static constexpr std::uint32_t behind_batches = 2;
    core::FlowMeasurement& measurement_;
    std::array<Batch, ring_size> ring_;
    // Batches submitted and batches added, each written by one side only;
    // their difference is the ring's fill. 32 bits: what atomic wait() sleeps on.
    alignas(64) std::atomic<std::uint32_t> submitted_{0};
    alignas(64) std::atomic<std::uint32_t> added_{0};
    std::atomic<bool> stopping_{false};  // set by the destructor once drained
    Batch spare_;  // the submitting thread's next buffers
    std::thread thread_;
};

}  // namespace flowsketch::app
