// `--threads 2`: the sketches are updated on a thread of their own while the
// calling thread reads, decodes and hashes each key (FlowMeasurement::prepare;
// each structure locates its own cells from the hash). Batches pass through a short
// ring in order, so the measurement sees exactly the packet sequence a single
// thread would: the reports are identical.
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
        core::FlowMeasurement::PreparedBatch prepared;  // of packets
    };
    /// An emptied batch to fill next (its buffers keep their capacity).
    /// Only the submitting thread calls take_spare(), submit() and drain().
    Batch take_spare();
    /// Queues a batch (waits while the ring is full).
    void submit(Batch batch);
    /// Returns once every submitted batch is in the measurement.
    void drain();

private:
    void run();

    static constexpr std::uint32_t ring_size = 8;
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
