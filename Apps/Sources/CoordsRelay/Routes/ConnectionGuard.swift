import CoordsCore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// Open connections in total and per client address, shared by every event loop.
final class ConnectionRegistry: Sendable {
    /// Why a connection was turned away.
    enum Refusal: String {
        case total = "total_cap"
        case perAddress = "address_cap"
    }

    let limits: ConnectionLimits
    private let state = Mutex<(total: Int, perAddress: [String: Int])>((0, [:]))

    init(limits: ConnectionLimits) { self.limits = limits }

    /// Counts a new connection from `address`, or says why it may not open (then nothing is counted).
    func open(address: String) -> Refusal? {
        state.withLock { state in
            guard state.total < limits.maximumConnections else { return .total }
            let current = state.perAddress[address] ?? 0
            guard current < limits.maximumConnectionsPerAddress else { return .perAddress }
            state.total += 1
            state.perAddress[address] = current + 1
            return nil
        }
    }

    /// Forgets a connection counted by ``open(address:)``.
    func close(address: String) {
        state.withLock { state in
            state.total = max(state.total - 1, 0)
            let left = (state.perAddress[address] ?? 1) - 1
            state.perAddress[address] = left > 0 ? left : nil
        }
    }

    /// Connections open now.
    var count: Int { state.withLock { $0.total } }
}

/// One connection's request phase, shared by its two guard handlers (both run on the
/// connection's event loop, so no locking).
final class ConnectionPhase {
    enum Phase {
        /// Between requests (or before the first byte of one): the idle timer runs.
        case idle
        /// Bytes of a request head arrived (or the connection just opened): the header timer runs.
        case readingHead
        /// The head arrived; the body timer runs until its end.
        case readingBody
        /// The request is complete; the relay is answering.
        case responding
        /// Upgraded to a WebSocket (the live channel): no HTTP deadline applies any more; the
        /// WebSocket's pings and the live idle check take over.
        case webSocket
    }

    var phase = Phase.readingHead
    var timer: Scheduled<Void>?
    /// Whether the ``RequestPhaseHandler`` is in the pipeline (on an upgradable connection it is
    /// added only once the first request turned out not to be an upgrade).
    var phaseHandlerInstalled = false
    /// Whether this relay closed the connection on purpose (so a close is counted once).
    var closedByGuard = false

    func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}

/// The first handler of every connection (it sees raw bytes): admission against the
/// connection caps, the idle and header deadlines, and the 503/408 answers it writes itself.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let shared: ConnectionPhase
    private let limits: ConnectionLimits
    private let metrics: RelayMetrics
    private let refusal: ConnectionRegistry.Refusal?

    init(shared: ConnectionPhase, limits: ConnectionLimits, metrics: RelayMetrics, refusal: ConnectionRegistry.Refusal?) {
        self.shared = shared
        self.limits = limits
        self.metrics = metrics
        self.refusal = refusal
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private var started = false

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        if let refusal {
            metrics.connectionRefused(refusal.rawValue)
            let message =
                refusal == .total
                ? "the relay has its maximum number of connections open; retry shortly"
                : "too many connections from this address; reuse one connection or retry shortly"
            answerAndClose(context, status: 503, code: "too_many_connections", message: message, retryAfter: 5)
            return
        }
        schedule(context, after: limits.headerTimeoutSeconds, reason: "header_timeout")
    }

    /// The connection became a WebSocket: stop every HTTP deadline for good.
    func enterWebSocket() {
        shared.phase = .webSocket
        shared.cancelTimer()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusal == nil, !shared.closedByGuard else { return }  // a refused connection reads nothing
        if shared.phase == .idle {
            shared.phase = .readingHead
            schedule(context, after: limits.headerTimeoutSeconds, reason: "header_timeout")
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        shared.cancelTimer()
        context.fireChannelInactive()
    }

    /// Arms the timer of the current phase; the parts handler calls back through ``ConnectionPhase``.
    func schedule(_ context: ChannelHandlerContext, after seconds: UInt64, reason: String) {
        shared.cancelTimer()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        shared.timer = context.eventLoop.scheduleTask(in: .seconds(Int64(clamping: seconds))) {
            let (handler, context) = bound.value
            handler.expire(context, reason: reason)
        }
    }

    private func expire(_ context: ChannelHandlerContext, reason: String) {
        guard !shared.closedByGuard, shared.phase != .webSocket else { return }
        metrics.connectionClosed(reason)
        switch shared.phase {
        case .readingHead:
            answerAndClose(
                context, status: 408, code: "request_timeout",
                message: "the request head did not arrive within \(limits.headerTimeoutSeconds) s", retryAfter: nil)
        case .idle, .readingBody, .responding, .webSocket:
            shared.closedByGuard = true
            context.close(promise: nil)
        }
    }

    /// Answers a request the HTTP decoder refused before any HTTP handler of ours was in the
    /// pipeline (the first request of an upgradable connection), with the same JSON refusal the
    /// ``RequestPhaseHandler`` gives later ones.
    func refuseUndecodable(_ context: ChannelHandlerContext, _ failure: RelayFailure) {
        guard !shared.closedByGuard else { return }
        metrics.connectionClosed("malformed_request")
        answerAndClose(context, status: failure.status, code: failure.code, message: failure.message, retryAfter: nil)
    }

    /// Writes a complete JSON error response straight to the socket and closes. Only used when
    /// no response is in progress on this connection.
    private func answerAndClose(_ context: ChannelHandlerContext, status: Int, code: String, message: String, retryAfter: Int?) {
        shared.closedByGuard = true
        shared.cancelTimer()
        let body = RelayFailure(status, code, message).reply.body
        var head = "HTTP/1.1 \(status) \(HTTPResponse.Status(code: status).reasonPhrase)\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        if let retryAfter { head += "Retry-After: \(retryAfter)\r\n" }
        head += "\r\n"
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.count)
        buffer.writeString(head)
        buffer.writeBytes(body)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// The second guard handler, after the HTTP decoder (it sees request parts): moves the phase
/// along (head → body deadline, end → responding, response end → idle timer), and answers the
/// decoder's refusals (oversized headers, unknown methods, malformed requests) with JSON.
final class RequestPhaseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let shared: ConnectionPhase
    private let guardHandler: ConnectionGuardHandler
    private let limits: ConnectionLimits
    private let metrics: RelayMetrics
    private var guardContext: ChannelHandlerContext?

    init(shared: ConnectionPhase, guardHandler: ConnectionGuardHandler, limits: ConnectionLimits, metrics: RelayMetrics) {
        self.shared = shared
        self.guardHandler = guardHandler
        self.limits = limits
        self.metrics = metrics
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // No guard handler in this pipeline (tests): nothing to reach.
        guardContext = try? context.pipeline.syncOperations.context(handler: guardHandler)
        shared.phaseHandlerInstalled = true
    }

    func handlerRemoved(context: ChannelHandlerContext) { guardContext = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            shared.phase = .readingBody
            arm(limits.bodyTimeoutSeconds, reason: "body_timeout")
        case .body:
            break
        case .end:
            shared.phase = .responding
            shared.cancelTimer()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), closeAfterResponse {
            // The answer to a request whose body could not be decoded: sent, then the connection goes.
            let channel = context.channel
            let done = context.eventLoop.makePromise(of: Void.self)
            done.futureResult.whenComplete { _ in channel.close(promise: nil) }
            done.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: done)
            return
        }
        if case .end = unwrapOutboundIn(data), shared.phase == .responding {
            shared.phase = .idle
            arm(limits.idleTimeoutSeconds, reason: "idle")
        }
        context.write(data, promise: promise)
    }

    /// A body the decoder refused (malformed chunked encoding): the relay's own 400 answer goes
    /// out first, then the connection closes (it cannot be read any further).
    private var closeAfterResponse = false

    private func arm(_ seconds: UInt64, reason: String) {
        guard let guardContext else { return }
        guardHandler.schedule(guardContext, after: seconds, reason: reason)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        metrics.connectionClosed("malformed_request")
        if shared.phase == .readingBody, !shared.closedByGuard {
            // The route handler sees the error in its body stream and answers 400 (JSON);
            // the body deadline still runs in case it never does.
            closeAfterResponse = true
            context.fireErrorCaught(error)
            return
        }
        shared.cancelTimer()
        guard !shared.closedByGuard, shared.phase == .readingHead || shared.phase == .idle else {
            shared.closedByGuard = true
            context.close(promise: nil)
            return
        }
        shared.closedByGuard = true
        let failure = Self.failure(for: parserError)
        let body = failure.reply.body
        let head = HTTPResponse(
            status: .init(code: failure.status),
            headerFields: [.contentType: "application/json", .contentLength: String(body.count), .connection: "close"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The JSON answer for a request the HTTP decoder refused.
    static func failure(for error: HTTPParserError) -> RelayFailure {
        switch error {
        case .headerOverflow:
            return RelayFailure(431, "headers_too_large", "the request line and headers are too large")
        case .invalidMethod:
            return RelayFailure(501, "method_not_implemented", "the relay does not know this HTTP method")
        case .invalidURL:
            return RelayFailure(400, "invalid_url", "the request target is not a valid URL")
        default:
            return RelayFailure(400, "malformed_request", "the request is not valid HTTP/1.1 (\(error))")
        }
    }
}

/// On an upgradable connection, the handler at the end of the pipeline while the first request is
/// decoded by the upgrade stage: it answers that request's decoder refusals (oversized headers,
/// unknown methods, garbage) with JSON through the guard. Once the ``RequestPhaseHandler`` is
/// installed it passes everything on.
final class UpgradeStageRefusalHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let shared: ConnectionPhase
    private let guardHandler: ConnectionGuardHandler

    init(shared: ConnectionPhase, guardHandler: ConnectionGuardHandler) {
        (self.shared, self.guardHandler) = (shared, guardHandler)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.fireChannelRead(data) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !shared.phaseHandlerInstalled, let parserError = error as? HTTPParserError,
            // No guard handler: the error goes on down the pipeline unchanged.
            let guardContext = try? context.pipeline.syncOperations.context(handler: guardHandler)
        else {
            context.fireErrorCaught(error)
            return
        }
        guardHandler.refuseUndecodable(guardContext, RequestPhaseHandler.failure(for: parserError))
    }
}

/// The relay's HTTP/1.1 child channel: Hummingbird's HTTP/1 channel with the connection guard in
/// front (caps, idle timeout, header and body deadlines, JSON refusals). With the live channel on
/// (``LiveLimits/enabled``) it is the WebSocket-upgradable variant: `GET /v1/relay/live` with
/// `Upgrade: websocket` becomes a live connection (PROTOCOL.md §8), the guard's HTTP deadlines
/// stop and ``RelayService/serveLive(inbound:outbound:address:logger:drop:)`` takes over; any other
/// request carrying `Upgrade: websocket` is answered 400. With it off, the channel is plain
/// HTTP/1 and `/v1/relay/live` is a 404 like on a reference relay.
struct RelayHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    /// One connection, plain or upgradable.
    enum Value: ServerChildChannelValue {
        case plain(HTTP1Channel.Value)
        case upgradable(HTTP1WebSocketUpgradeChannel.Value, HTTP1WebSocketUpgradeChannel)

        var channel: any NIOCore.Channel {
            switch self {
            case .plain(let value): value.channel
            case .upgradable(let value, _): value.channel
            }
        }
    }

    let responder: HTTPChannelHandler.Responder
    let limits: ConnectionLimits
    let registry: ConnectionRegistry
    let metrics: RelayMetrics
    let service: RelayService
    /// Hummingbird's decoder limits (header sizes), applied per connection.
    let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
        maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 32 * 1024,
        maxHeaderFieldCount: 100)

    func setup(channel: any NIOCore.Channel, logger: Logger) -> EventLoopFuture<Value> {
        let remote = channel.remoteAddress?.ipAddress
        let address = service.configuration.addresses.key(forwardedFor: nil, remoteAddress: remote)
        let refusal = registry.open(address: address)
        if refusal == nil {
            metrics.connectionsOpen.set(Int64(registry.count))
            let registry = registry
            let metrics = metrics
            channel.closeFuture.whenComplete { _ in
                registry.close(address: address)
                metrics.connectionsOpen.set(Int64(registry.count))
            }
        }
        let (limits, metrics, decoder, responder, service) = (limits, metrics, decoder, responder, service)
        let live = service.configuration.live
        return channel.eventLoop.makeCompletedFuture { () -> (HTTP1Channel.Configuration, NIOLoopBound<(ConnectionGuardHandler, ConnectionPhase)>) in
            let shared = ConnectionPhase()
            let guardHandler = ConnectionGuardHandler(shared: shared, limits: limits, metrics: metrics, refusal: refusal)
            try channel.pipeline.syncOperations.addHandler(guardHandler, position: .first)
            let phaseHandler = RequestPhaseHandler(shared: shared, guardHandler: guardHandler, limits: limits, metrics: metrics)
            let box = NIOLoopBound(phaseHandler, eventLoop: channel.eventLoop)
            let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [box.value], idleTimeout: nil, httpDecoderConfiguration: decoder)
            return (http1, NIOLoopBound((guardHandler, shared), eventLoop: channel.eventLoop))
        }.flatMap { (http1, guardBox) -> EventLoopFuture<Value> in
            guard live.enabled else {
                return HTTP1Channel(responder: responder, configuration: http1).setup(channel: channel, logger: logger).map(Value.plain)
            }
            let handler = HTTP1WebSocketUpgradeChannel(
                responder: responder,
                configuration: .init(
                    http1: http1,
                    ws: .init(
                        maxFrameSize: LiveFrame.maximumFrameBytes,
                        autoPing: .enabled(timePeriod: .seconds(Int64(clamping: live.pingIntervalSeconds))), validateUTF8: true))
            ) { head, _, _ in
                guard head.method == .get, head.path == LiveFrame.path else { return .dontUpgrade }
                guardBox.value.0.enterWebSocket()  // the upgrade decision runs on the connection's event loop
                let client = clientAddress(headers: head.headerFields, remoteAddress: remote, policy: service.configuration.addresses)
                return .upgrade([:]) { inbound, outbound, context in
                    try await service.serveLive(
                        inbound: inbound, outbound: outbound, address: client, logger: context.logger, drop: { channel.close(promise: nil) })
                }
            }
            return handler.setup(channel: channel, logger: logger).flatMapThrowing { value in
                let (guardHandler, shared) = guardBox.value
                // Right after the HTTP decoder: an Upgrade to anything but websocket is ignored.
                let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
                try channel.pipeline.syncOperations.addHandler(IgnoreUnknownUpgrade(), position: .after(decoder))
                try channel.pipeline.syncOperations.addHandler(UpgradeStageRefusalHandler(shared: shared, guardHandler: guardHandler))
                return Value.upgradable(value, handler)
            }
        }
    }

    func handle(value: Value, logger: Logger) async {
        switch value {
        case .plain(let channel): await handleHTTP(asyncChannel: channel, logger: logger)
        case .upgradable(let value, let handler):
            var filtered = logger
            filtered.handler = UpgradeNoiseFilter(inner: logger.handler)
            await handler.handle(value: value, logger: filtered)
        }
    }
}

/// Hummingbird's WebSocket channel logs a connection that closed before its first request was
/// decoded — one the guard refused (503), timed out (408) or answered for an undecodable request —
/// as an error ("Error handling upgrade result"). That is an ordinary refusal the guard already
/// counted in the metrics: this handler lowers exactly that message to debug and passes
/// everything else on unchanged.
struct UpgradeNoiseFilter: LogHandler {
    var inner: any LogHandler

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        if event.level >= .error, event.message.description == "Error handling upgrade result" {
            guard inner.logLevel <= .debug else { return }
            event.level = .debug
        }
        inner.log(event: event)
    }
}

/// Removes an `Upgrade` request header that does not ask for `websocket` (and the `upgrade`
/// token of `Connection`), so the request is answered as plain HTTP/1.1 — RFC 9110 section 7.8 lets a
/// server ignore an upgrade it does not offer. NIO's upgrade stage would otherwise take the head
/// of such a request (`curl --http2` sends `Upgrade: h2c`) and the connection ended unanswered.
/// Only the connection's first request reaches the upgrade stage. When that request is a
/// WebSocket upgrade the relay takes (`GET /v1/relay/live`, valid headers), the handler leaves the
/// pipeline with it: the bytes that follow are frames, not request parts. Otherwise the connection
/// stays HTTP and the handler stays too: a later request asking for a WebSocket is marked
/// `not-first` and answered 400 by the live route (Hummingbird would answer it 307 to itself).
///
/// A WebSocket upgrade NIO's upgrader would refuse by closing the connection unanswered (no
/// `Sec-WebSocket-Key`, two of them, one that is not 16 bytes of base64, a
/// `Sec-WebSocket-Version` other than `13`) is turned into a plain request the same way, marked
/// with ``refusedUpgradeHeader``: the live route answers it 400 or 426 (RFC 6455 section 4.2.1; RFC 6455 section 4.4).
final class IgnoreUnknownUpgrade: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    /// The request header the handler adds to a refused WebSocket upgrade, naming why (a client's
    /// own header of that name is removed first).
    static let refusedUpgradeHeader = "coords-refused-upgrade"
    /// Whether a request head went by (only the first can be upgraded).
    private var seenFirst = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        let first = !seenFirst
        seenFirst = true
        head.headers.remove(name: Self.refusedUpgradeHeader)
        if head.headers["upgrade"].contains(where: { $0.lowercased().contains("websocket") }) {
            if let refusal = first ? Self.refusal(head.headers) : "not-first" {
                head.headers.add(name: Self.refusedUpgradeHeader, value: refusal)
                Self.removeUpgrade(&head)
                context.fireChannelRead(wrapInboundOut(.head(head)))
            } else if head.method == .GET, head.uri == LiveFrame.path,
                head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "upgrade" })
            {
                // The upgrade goes ahead: passed on first, then out of the pipeline (a removed context forwards nothing).
                context.fireChannelRead(wrapInboundOut(.head(head)))
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            } else {
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
            return
        }
        guard head.headers.contains(name: "upgrade") else {
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        Self.removeUpgrade(&head)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// Why NIO's WebSocket upgrader would refuse these headers (`version` or `key`), or nil.
    static func refusal(_ headers: HTTPHeaders) -> String? {
        guard headers[canonicalForm: "sec-websocket-version"].map({ String($0.trimmingSpaces) }) == ["13"] else { return "version" }
        let keys = headers[canonicalForm: "sec-websocket-key"]
        guard keys.count == 1, let key = keys.first,
            (try? Base64.decode(String(key.trimmingSpaces), variant: .standard, field: "key"))?.count == 16  // not base64: refused as missing
        else {
            return "key"  // not base64 of 16 bytes: the same refusal as a missing key
        }
        return nil
    }

    /// Drops the `Upgrade` header and the `upgrade` token of `Connection`.
    private static func removeUpgrade(_ head: inout HTTPRequestHead) {
        head.headers.remove(name: "upgrade")
        let connection = head.headers["connection"].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingSpaces }.filter { $0.lowercased() != "upgrade" }
        head.headers.remove(name: "connection")
        if !connection.isEmpty { head.headers.add(name: "Connection", value: connection.joined(separator: ", ")) }
    }
}
