import CoordsCore
import CoordsTLS
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The CLI's WebSocket client for the live channel, with the limits of PROTOCOL.md §4.1: the
/// upgrade must complete (a `101` with the right `Sec-WebSocket-Accept`) within
/// ``ClientLimits/upgradeSeconds`` and ``ClientLimits/upgradeBytes``; frames and messages over
/// ``LiveFrame/maximumFrameBytes`` are refused; frames are read only as fast as they are handled;
/// a connection silent for ``ClientLimits/liveSilenceSeconds`` is closed. Whatever fails, the
/// channel is closed before ``run(url:opening:onText:)`` returns or throws.
enum LiveSocket {
    /// How a connection ended.
    enum Failure: Error, CustomStringConvertible {
        /// The URL is not `ws://` or `wss://` with a host.
        case invalidURL
        /// The relay answered the upgrade with something other than `101` (the status is not
        /// known here; a plain GET tells it).
        case notUpgraded
        /// The relay's `101` was wrong (e.g. its `Sec-WebSocket-Accept`), or the upgrade took too
        /// long or too many bytes.
        case badUpgrade(String)
        /// The relay broke the WebSocket protocol after the upgrade (a frame over the limit, a
        /// malformed frame, a message over the limit).
        case protocolError(String)
        /// The relay's certificate was refused, or the trust store is unusable (the sentence says
        /// which and what to do).
        case certificate(String)

        var description: String {
            switch self {
            case .invalidURL: "not a ws:// or wss:// URL"
            case .notUpgraded: "the relay refused the upgrade"
            case .badUpgrade(let why): "the relay's upgrade answer was refused (\(why))"
            case .protocolError(let why): "the relay broke the WebSocket protocol (\(why))"
            case .certificate(let why): why
            }
        }
    }

    /// What the relay's close frame said (nil code: no code in it).
    struct Close {
        var code: Int?
        var reason: String?
    }

    private enum Upgrade: Sendable {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case notUpgraded
    }

    /// Connects to `url`, sends the `opening` text frames, then hands each received text
    /// message to `onText` (one at a time; frames wait unread meanwhile) until the relay closes.
    /// - Returns: the relay's close frame, or nil when the connection ended without one.
    /// - Throws: ``Failure``, connection errors, and whatever `onText` throws (the connection is
    ///   closed first).
    static func run(url: String, opening: [String], onText: ([UInt8]) async throws -> Void) async throws -> Close? {
        guard let target = Target(url) else { throw Failure.invalidURL }
        if target.tls, case .failure(let error) = RelayHTTP.trust { throw Failure.certificate("\(error)") }
        let channelBox = NIOLockedValueBox<(any NIOCore.Channel)?>(nil)
        let broken = NIOLockedValueBox<String?>(nil)  // which upgrade limit closed the channel
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(ClientLimits.connectSeconds))
        let upgradeFuture: EventLoopFuture<Upgrade>
        do {
            upgradeFuture = try await bootstrap.connect(host: target.host, port: target.port) { channel in
                channelBox.withLockedValue { $0 = channel }
                return channel.eventLoop.makeCompletedFuture { try configure(channel, target, broken) }
            }
        } catch {
            // Closing a channel that failed to connect may itself fail (already closed): the connect error is the one to report.
            try? await channelBox.withLockedValue { $0 }?.close()
            throw error
        }
        guard let channel = channelBox.withLockedValue({ $0 }) else { throw Failure.badUpgrade("no channel") }
        // The upgrade's deadline: close the channel, which fails the upgrade future.
        let deadline = channel.eventLoop.scheduleTask(in: .seconds(ClientLimits.upgradeSeconds)) {
            broken.withLockedValue { $0 = $0 ?? "no complete upgrade within \(ClientLimits.upgradeSeconds) s" }
            channel.close(promise: nil)
        }
        let upgrade: Upgrade
        do {
            upgrade = try await upgradeFuture.get()
            deadline.cancel()
        } catch {
            deadline.cancel()
            // A limit may have closed it already (then close fails); the upgrade's failure is what to report.
            try? await channel.close()
            if target.tls, CertificateDiagnosis.isCertificateRefusal(error) {
                throw Failure.certificate(await CertificateDiagnosis.explain(error, host: target.host, port: target.port))
            }
            throw Failure.badUpgrade(broken.withLockedValue { $0 } ?? Self.reason(error))
        }
        guard case .websocket(let socket) = upgrade else {
            try? await channel.close()  // it may be closed already; the refusal is what to report
            throw Failure.notUpgraded
        }
        do {
            return try await socket.executeThenClose { inbound, outbound in
                // A relay may break the protocol before our first frame is out: what it sent
                // explains a failed write better than the write's own error does.
                var writeFailure: (any Error)?
                do {
                    for text in opening { try await outbound.write(frame(.text, text: text)) }
                } catch {
                    writeFailure = error
                }
                let close = try await receive(inbound, outbound, onText)
                if let writeFailure { throw writeFailure }
                return close
            }
        } catch let error as NIOWebSocketError {
            throw Failure.protocolError("\(error)")
        } catch is ByteToMessageDecoderError {
            throw Failure.protocolError("a malformed frame")
        }
    }

    /// Reads frames: answers pings, joins fragments (at most one message's worth), hands text
    /// messages on, and returns at the relay's close.
    private static func receive(
        _ inbound: NIOAsyncChannelInboundStream<WebSocketFrame>, _ outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>,
        _ onText: ([UInt8]) async throws -> Void
    ) async throws -> Close? {
        var message: [UInt8] = []
        var messageOpcode: WebSocketOpcode?
        for try await frame in inbound {
            if frame.opcode == .ping {
                guard frame.fin else { throw Failure.protocolError("a fragmented ping") }
                try await outbound.write(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData))
                continue
            }
            if frame.opcode == .pong { continue }
            if frame.opcode == .connectionClose {
                var data = frame.unmaskedData
                let code = data.readInteger(as: UInt16.self).map(Int.init)
                let reason = data.readString(length: min(data.readableBytes, 123))
                var echo = ByteBuffer()
                if let code { echo.writeInteger(UInt16(clamping: code)) }
                // The echo is a courtesy: a relay that already went away cannot receive it.
                try? await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: echo))
                return Close(code: code, reason: reason.map { Terminal.safe($0) })
            }
            switch frame.opcode {
            case .text, .binary:
                guard messageOpcode == nil else { throw Failure.protocolError("a new message inside a fragmented one") }
                messageOpcode = frame.opcode
                message = []
            case .continuation:
                guard messageOpcode != nil else { throw Failure.protocolError("a continuation without a message") }
            default:
                throw Failure.protocolError("an unknown opcode")
            }
            guard message.count <= LiveFrame.maximumFrameBytes - frame.length else {
                throw Failure.protocolError("a message over \(LiveFrame.maximumFrameBytes) bytes")
            }
            message.append(contentsOf: frame.unmaskedData.readableBytesView)
            guard frame.fin else { continue }
            let opcode = messageOpcode
            messageOpcode = nil
            if opcode == .text { try await onText(message) }
            message = []
        }
        return nil
    }

    /// The pipeline before the upgrade: TLS for `wss`, the upgrade guard, the silence watch, and
    /// NIO's HTTP client with the WebSocket upgrader (frames up to the §8.4 limit).
    private static func configure(_ channel: any NIOCore.Channel, _ target: Target, _ broken: NIOLockedValueBox<String?>) throws
        -> EventLoopFuture<Upgrade>
    {
        let sync = channel.pipeline.syncOperations
        if target.tls {
            let context = try NIOSSLContext(configuration: try RelayHTTP.trust.get())
            try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: target.isIPAddress ? nil : target.host))
        }
        try sync.addHandler(UpgradeGuard(limit: ClientLimits.upgradeBytes, broken: broken), name: UpgradeGuard.name)
        try sync.addHandler(IdleStateHandler(readTimeout: .seconds(ClientLimits.liveSilenceSeconds)))
        try sync.addHandler(CloseWhenSilent())
        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(maxFrameSize: LiveFrame.maximumFrameBytes, enableAutomaticErrorHandling: false) {
            channel, _ in
            channel.eventLoop.makeCompletedFuture {
                // The upgrade is complete: the guard stops counting here, on the event loop, before
                // the bytes that came with the 101 are read as frames. (Removed later, from the
                // awaiting task, a frame that arrived in between counted as upgrade bytes: under
                // load a 20 KB frame tripped the 16 KiB guard instead of the frame limit.)
                channel.pipeline.syncOperations.removeHandler(name: UpgradeGuard.name, promise: nil)
                return Upgrade.websocket(
                    try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
                        wrappingChannelSynchronously: channel, configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8))))
            }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.hostHeader)
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target.path, headers: headers)
        var configuration = NIOUpgradableHTTPClientPipelineConfiguration(
            upgradeConfiguration: NIOTypedHTTPClientUpgradeConfiguration(
                upgradeRequestHead: head, upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(Upgrade.notUpgraded) }))
        configuration.leftOverBytesStrategy = .forwardBytes
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = ClientLimits.upgradeBytes
        configuration.decoderConfiguration = limits
        return try sync.configureUpgradableHTTPClientPipeline(configuration: configuration)
    }

    private static func frame(_ opcode: WebSocketOpcode, text: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: ByteBuffer(string: text))
    }

    private static func reason(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("upgraderDeniedUpgrade") || text.contains("Denied") { return "a wrong Sec-WebSocket-Accept or Upgrade header" }
        return Terminal.safe(String(text.prefix(160)))
    }

    /// Where a `ws://` or `wss://` URL points.
    struct Target {
        var tls: Bool
        var host: String
        var port: Int
        var path: String
        var hostHeader: String
        var isIPAddress: Bool

        init?(_ url: String) {
            let lower = url.lowercased()
            let rest: Substring
            if lower.hasPrefix("wss://") {
                (tls, rest) = (true, url.dropFirst(6))
            } else if lower.hasPrefix("ws://") {
                (tls, rest) = (false, url.dropFirst(5))
            } else {
                return nil
            }
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
            hostHeader = String(authority)
            var hostPart = authority
            var portPart: Substring?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                hostPart = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") { portPart = after.dropFirst() } else if !after.isEmpty { return nil }
            } else if let colon = authority.lastIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            }
            guard !hostPart.isEmpty, !hostPart.contains("@") else { return nil }
            host = String(hostPart)
            if let portPart {
                guard let number = Int(portPart), (1...65_535).contains(number) else { return nil }
                port = number
            } else {
                port = tls ? 443 : 80
            }
            isIPAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil  // a question, not an error: a name does not parse
        }
    }
}

/// Closes the connection when the relay's answer to the upgrade request has more than `limit`
/// bytes of head. Only the head counts: bytes after its blank line are the first frames, which
/// may arrive in the same read (under load a 20 KB frame right behind the 101 counted as head
/// and tripped this guard instead of the frame limit). Removed once the WebSocket is up.
private final class UpgradeGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    static let name = "coords-upgrade-guard"
    private let limit: Int
    private let broken: NIOLockedValueBox<String?>
    private var received = 0
    /// The last four bytes seen, to find the head's end (CR LF CR LF) across reads.
    private var window: UInt32 = 0
    private var headComplete = false

    init(limit: Int, broken: NIOLockedValueBox<String?>) { (self.limit, self.broken) = (limit, broken) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !headComplete else {
            context.fireChannelRead(data)
            return
        }
        var headBytes = 0
        for byte in unwrapInboundIn(data).readableBytesView {
            headBytes += 1
            window = window << 8 | UInt32(byte)
            if window == 0x0D0A_0D0A {
                headComplete = true
                break
            }
        }
        received = received > limit - headBytes ? limit + 1 : received + headBytes
        guard received <= limit else {
            broken.withLockedValue { $0 = $0 ?? "more than \(limit) bytes before the upgrade completed" }
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }
}

/// Closes the connection on the ``IdleStateHandler``'s read timeout.
private final class CloseWhenSilent: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
