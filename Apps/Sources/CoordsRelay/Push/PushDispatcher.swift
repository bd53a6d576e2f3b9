import AsyncHTTPClient
import CoordsCore
import CoordsTLS
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Sends the wakes of PROTOCOL.md §8.7: for an envelope accepted into a mailbox with a push
/// registration, one content-free POST to its endpoint — coalesced (one in flight and at most
/// one every ``PushLimits/coalesceMilliseconds`` per mailbox), retried with backoff, the
/// endpoint's addresses checked before every attempt, redirects never followed, and a
/// registration removed when its endpoint is gone (404/410), refused, or keeps failing.
///
/// A service of the relay application: ``run()`` owns the HTTP client and the wakes in flight;
/// graceful shutdown cancels them. ``wake(recipient:)`` only queues, so posting an envelope
/// never waits for a push.
public final class PushDispatcher: Service, Sendable {
    /// The constant body of every wake: no sender, no id, no size, no count.
    public static let wakeBody = #"{"type":"coords-wake"}"#

    private struct Endpoint {
        /// A wake is waiting to be sent: later envelopes fold into it.
        var scheduled = false
        /// An attempt loop is running.
        var sending = false
        var lastSent: ContinuousClock.Instant?
        var failedWakes = 0
    }

    private struct Book {
        var endpoints: [String: Endpoint] = [:]
        /// Wakes scheduled or sending (bounded by ``PushLimits/maximumConcurrentWakes``).
        var active = 0
        /// Wakes sending per endpoint host (each bounded by ``PushLimits/maximumConcurrentWakesPerHost``).
        var perHost: [String: Int] = [:]
        /// Wakes sending per registering address (each bounded by
        /// ``PushLimits/maximumConcurrentWakesPerAddress``; registrations of unknown origin take none).
        var perAddress: [String: Int] = [:]
    }

    private let book = Mutex(Book())
    private let queue: (stream: AsyncStream<String>, continuation: AsyncStream<String>.Continuation)
    let limits: PushLimits
    let store: any RelayStore
    let clock: TimeSource
    let logger: Logger
    let metrics: RelayMetrics

    init(limits: PushLimits, store: any RelayStore, clock: TimeSource, logger: Logger, metrics: RelayMetrics) {
        self.limits = limits
        self.store = store
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        queue = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(max(limits.maximumConcurrentWakes, 1)))
    }

    /// Asks for a wake of `recipient`'s endpoint, if it registered one. Returns at once; folds
    /// into a wake already waiting for that mailbox, and skips when too many are in flight.
    public func wake(recipient: String) {
        let decision = book.withLock { book -> String? in
            var endpoint = book.endpoints[recipient] ?? Endpoint()
            if endpoint.scheduled { return "coalesced" }
            if book.active >= limits.maximumConcurrentWakes { return "skipped" }
            endpoint.scheduled = true
            book.active += 1
            book.endpoints[recipient] = endpoint
            return nil
        }
        if let decision {
            metrics.pushWake(decision)
        } else {
            queue.continuation.yield(recipient)
        }
    }

    /// Forgets the bookkeeping of mailboxes with nothing in flight and no failures (the sweep
    /// calls it, so the table holds only mailboxes woken recently).
    func prune() {
        let horizon = ContinuousClock.now - .milliseconds(limits.coalesceMilliseconds)
        book.withLock { book in
            book.endpoints = book.endpoints.filter { _, endpoint in
                endpoint.scheduled || endpoint.sending || endpoint.failedWakes > 0 || (endpoint.lastSent.map { $0 > horizon } ?? false)
            }
        }
    }

    public func run() async throws {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .milliseconds(Int64(clamping: limits.timeoutMilliseconds)))
        configuration.decompression = .disabled
        // Endpoints are checked against the system's trust store, or the bundle SSL_CERT_FILE names.
        configuration.tlsConfiguration = try TrustStore.clientConfiguration()
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        await withDiscardingTaskGroup { group in
            for await recipient in queue.stream.cancelOnGracefulShutdown() {
                group.addTask { await self.deliver(recipient: recipient, client: client) }
            }
            group.cancelAll()
        }
        // Shutting down: a client that fails to close has nothing left to do.
        try? await client.shutdown()
    }

    // MARK: One wake

    private enum Attempt {
        case delivered
        case gone(String)
        case failed(String)
        /// The registration could not be read (store outage): the endpoint was not asked.
        case storeUnavailable(String)
    }

    private func deliver(recipient: String, client: HTTPClient) async {
        // Coalesce: wait until no attempt is running and the interval since the last wake passed.
        while !Task.isCancelled {
            let wait = book.withLock { book -> Duration in
                guard let endpoint = book.endpoints[recipient] else { return .zero }
                if endpoint.sending { return .milliseconds(200) }
                guard let last = endpoint.lastSent else { return .zero }
                let due = last + .milliseconds(limits.coalesceMilliseconds)
                return max(.zero, due - ContinuousClock.now)
            }
            if wait == .zero { break }
            // Cancelled while coalescing: the loop condition ends the wake.
            try? await Task.sleep(for: wait)
        }
        // Fair shares: one host's endpoints (which may never answer), and one client address's
        // registrations, hold a bounded number of slots each. A registration that cannot be read
        // here (store outage, none left) takes no share: the attempt loop below reads it again
        // and reports or ends the wake.
        var shares: (host: String, address: String?)?
        // Unreadable (outage) or unparsable: no share taken; the attempt loop reads it again and reports.
        if let registration = try? await store.pushRegistration(recipient: recipient, now: clock.now() / 1000),
            let parsed = try? PushEndpoint(parsing: registration.endpoint, allowInsecure: limits.allowLoopback)
        {
            let host = parsed.host.lowercased()
            let address = registration.registeredBy.isEmpty ? nil : registration.registeredBy
            let refusal = book.withLock { book -> String? in
                let onHost = book.perHost[host] ?? 0
                guard onHost < limits.maximumConcurrentWakesPerHost else { return "skipped_host" }
                let fromAddress = address.map { book.perAddress[$0] ?? 0 } ?? 0
                guard fromAddress < limits.maximumConcurrentWakesPerAddress else { return "skipped_address" }
                book.perHost[host] = onHost + 1
                if let address { book.perAddress[address] = fromAddress + 1 }
                return nil
            }
            if let refusal {
                metrics.pushWake(refusal)
                book.withLock { book in
                    book.endpoints[recipient]?.scheduled = false
                    book.active = max(0, book.active - 1)
                }
                return
            }
            shares = (host, address)
        }
        defer {
            if let shares {
                book.withLock { book in
                    let left = (book.perHost[shares.host] ?? 1) - 1
                    book.perHost[shares.host] = left > 0 ? left : nil
                    if let address = shares.address {
                        let left = (book.perAddress[address] ?? 1) - 1
                        book.perAddress[address] = left > 0 ? left : nil
                    }
                }
            }
        }
        book.withLock { book in
            book.endpoints[recipient, default: Endpoint()].scheduled = false
            book.endpoints[recipient, default: Endpoint()].sending = true
            book.endpoints[recipient, default: Endpoint()].lastSent = .now
        }
        var outcome = Attempt.failed("cancelled")
        var endpointURL: String?
        for attempt in 0...limits.retryDelaysMilliseconds.count where !Task.isCancelled {
            if attempt > 0 {
                do { try await Task.sleep(for: .milliseconds(limits.retryDelaysMilliseconds[attempt - 1])) } catch { break }
            }
            // Read it again each time: a newer registration replaces the endpoint, a removal ends the wake.
            let found: PushRegistration?
            do {
                found = try await store.pushRegistration(recipient: recipient, now: clock.now() / 1000)
            } catch {
                // A store outage is not "nothing to wake": the attempt fails and is retried after
                // the next delay; it never counts against the endpoint (which was not asked).
                outcome = .storeUnavailable("\(error)")
                logger.warning("push registration unreadable", metadata: ["attempt": "\(attempt + 1)", "error": "\(error)"])
                continue
            }
            guard let registration = found else {
                outcome = .delivered  // nothing (left) to wake
                endpointURL = nil
                break
            }
            endpointURL = registration.endpoint
            outcome = await send(to: registration.endpoint, client: client)
            if case .failed(let reason) = outcome {
                // The first failure of a wake is worth an operator's eye (an endpoint's certificate
                // refused, a distributor down); the retries after it only repeat it.
                logger.log(
                    level: attempt == 0 ? .warning : .debug, "push attempt failed",
                    metadata: ["attempt": "\(attempt + 1)", "reason": "\(reason)"])
                continue
            }
            break
        }
        var drop: String?
        switch outcome {
        case .delivered:
            if endpointURL != nil { metrics.pushWake("delivered") }
            book.withLock { $0.endpoints[recipient]?.failedWakes = 0 }
        case .gone(let reason):
            drop = reason
        case .storeUnavailable(let reason):
            metrics.pushWake("store_unavailable")
            logger.error("push wake abandoned: the store could not be read", metadata: ["error": "\(reason)"])
        case .failed(let reason):
            metrics.pushWake("failed")
            let failed = book.withLock { book -> Int in
                book.endpoints[recipient, default: Endpoint()].failedWakes += 1
                return book.endpoints[recipient]?.failedWakes ?? 0
            }
            if failed >= limits.failedWakesBeforeDrop, !Task.isCancelled { drop = "\(failed) wakes in a row failed; last: \(reason)" }
        }
        if let drop, let endpointURL {
            // A removal that fails now is retried by the next failed wake (the count starts again).
            if (try? await store.pushRemove(recipient: recipient, endpoint: endpointURL)) == true {
                metrics.pushDropped.increment()
                logger.info("push endpoint dropped", metadata: ["reason": "\(drop)"])
            }
            book.withLock { $0.endpoints[recipient]?.failedWakes = 0 }
        }
        book.withLock { book in
            book.endpoints[recipient]?.sending = false
            book.active = max(0, book.active - 1)
        }
    }

    private func send(to url: String, client: HTTPClient) async -> Attempt {
        let endpoint: PushEndpoint
        do {
            endpoint = try PushEndpoint(parsing: url, allowInsecure: limits.allowLoopback)
        } catch {
            return .gone(error.description)
        }
        let allowLoopback = limits.allowLoopback
        do {
            _ = try await NIOThreadPool.singleton.runIfActive { try EndpointPolicy.check(host: endpoint.host, allowLoopback: allowLoopback) }
        } catch let refusal as PushEndpointRefusal {
            return refusal.unresolved ? .failed(refusal.description) : .gone(refusal.description)
        } catch {
            return .failed("\(error)")
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "TTL", value: "86400")
        request.headers.add(name: "Urgency", value: "high")
        request.body = .bytes(ByteBuffer(string: Self.wakeBody))
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(clamping: limits.timeoutMilliseconds)))
            // The body is read only to free the connection; its content and errors do not matter.
            _ = try? await response.body.collect(upTo: 16_384)
            switch response.status.code {
            case 200..<300: return .delivered
            case 404, 410: return .gone("the endpoint answered \(response.status.code)")
            default: return .failed("the endpoint answered \(response.status.code)")
            }
        } catch {
            if CertificateDiagnosis.isCertificateRefusal(error) {
                let port = URLComponents(string: url)?.port ?? 443
                return .failed(await CertificateDiagnosis.explain(error, host: endpoint.host, port: port, server: "the push endpoint"))
            }
            return .failed("\(error)")
        }
    }
}
