import Synchronization

/// Groups concurrent requests into batches: a request that arrives while `maximumWorkers`
/// batches are already on their way waits in the queue, and the next free worker takes
/// everything queued (up to `maximumBatch`) in one call. At low load every request runs alone
/// (no added latency); under load one database round trip and one commit serve many requests —
/// the PostgreSQL store's counterpart of the LMDB store's group commit.
final class Batcher<Input: Sendable, Output: Sendable>: Sendable {
    private struct Job: Sendable {
        let input: Input
        let continuation: CheckedContinuation<Output, any Error>
    }

    private struct State {
        var queue: [Job] = []
        var head = 0
        var workers = 0
    }

    private let state = Mutex(State())
    private let maximumBatch: Int
    private let maximumWorkers: Int
    private let process: @Sendable ([Input]) async throws -> [Output]

    /// - Parameter process: runs one batch; returns one output per input, in order.
    init(maximumBatch: Int, maximumWorkers: Int, process: @escaping @Sendable ([Input]) async throws -> [Output]) {
        self.maximumBatch = max(maximumBatch, 1)
        self.maximumWorkers = max(maximumWorkers, 1)
        self.process = process
    }

    /// Queues `input` and returns its output once its batch ran; throws the batch's error.
    func submit(_ input: Input) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            let startWorker = state.withLock { state -> Bool in
                state.queue.append(Job(input: input, continuation: continuation))
                guard state.workers < maximumWorkers else { return false }
                state.workers += 1
                return true
            }
            if startWorker { Task { await self.work() } }
        }
    }

    private func work() async {
        while true {
            let batch = state.withLock { state -> [Job] in
                let waiting = state.queue.count - state.head
                guard waiting > 0 else {
                    state.workers -= 1
                    state.queue.removeAll(keepingCapacity: true)
                    state.head = 0
                    return []
                }
                let end = state.head + min(waiting, maximumBatch)
                let batch = Array(state.queue[state.head..<end])
                state.head = end
                if state.head > 1024, state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                let outputs = try await process(batch.map(\.input))
                guard outputs.count == batch.count else {
                    throw RelayStoreError(description: "a batch of \(batch.count) returned \(outputs.count) results")
                }
                for (job, output) in zip(batch, outputs) { job.continuation.resume(returning: output) }
            } catch {
                for job in batch { job.continuation.resume(throwing: error) }
            }
        }
    }
}
