import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Why a server's certificate was refused, in one sentence a user can act on.
///
/// BoringSSL reports every failed chain check as the same `CERTIFICATE_VERIFY_FAILED`. After such
/// a refusal, ``explain(_:host:port:environment:)`` looks again: it connects once more without
/// checking (it sends nothing over that connection and closes it after the handshake) to read the
/// certificate's dates, and once trusting only that certificate to learn whether it vouches for
/// itself. The decision itself stays BoringSSL's: this only names what it refused.
public enum CertificateDiagnosis {
    /// Whether `error` is a TLS refusal of the server's certificate (chain or host name), as
    /// opposed to a network failure or a handshake that failed for another reason.
    public static func isCertificateRefusal(_ error: any Error) -> Bool {
        hostNameMismatch(error) || "\(error)".contains("CERTIFICATE_VERIFY_FAILED")
    }

    private static func hostNameMismatch(_ error: any Error) -> Bool {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname { return true }
        return "\(error)".contains("failedToValidateHostname")
    }

    /// One sentence for a certificate refusal (``isCertificateRefusal(_:)``) of `host:port`: a wrong
    /// host name, an expired or not yet valid certificate, a self-signed one, or one from an
    /// authority the trust store does not hold — each with what to do.
    /// - Parameters:
    ///   - error: the refusal.
    ///   - host: the host name (or address) the client connected to.
    ///   - port: its port.
    ///   - environment: the variables the trust store was built from (for the advice).
    ///   - server: what the server is, for the sentence ("the relay", "PostgreSQL").
    ///   - advice: how to trust a private certificate authority (``TrustStore/advice`` by default).
    ///   - startTLS: for a protocol that asks for TLS inside its own connection, what to send
    ///     first (``postgresSSLRequest``); nil for TLS from the first byte.
    /// - Returns: the sentence (never throws: when looking again fails, a general sentence).
    public static func explain(
        _ error: any Error, host: String, port: Int, environment: [String: String] = ProcessInfo.processInfo.environment,
        server: String = "the relay", advice: String = TrustStore.advice, startTLS: [UInt8]? = nil
    ) async -> String {
        let certificate = "\(server)'s certificate"
        if hostNameMismatch(error) {
            return "\(certificate) is not valid for \(host) (check the host name you connect to)"
        }
        let extra = environment["SSL_CERT_FILE"].map { " (SSL_CERT_FILE is \($0))" } ?? ""
        guard let leaf = await peerCertificate(host: host, port: port, trusting: nil, startTLS: startTLS) else {
            return "\(certificate) was refused\(extra); \(advice)"
        }
        let now = time(nil)
        if leaf.notValidAfter < now {
            return "\(certificate) expired on \(day(leaf.notValidAfter)) (renew it on the server, or check this computer's clock)"
        }
        if leaf.notValidBefore > now {
            return "\(certificate) is not valid before \(day(leaf.notValidBefore)) (check this computer's clock)"
        }
        if await peerCertificate(host: host, port: port, trusting: leaf, startTLS: startTLS) != nil {
            return "\(certificate) is self-signed, so nothing vouches for it\(extra); \(advice)"
        }
        return "\(certificate) is issued by an authority this computer does not trust\(extra); \(advice)"
    }

    /// The date of `seconds` since 1970 as YYYY-MM-DD (UTC).
    private static func day(_ seconds: time_t) -> String {
        var parts = tm()
        var value = seconds
        guard gmtime_r(&value, &parts) != nil else { return "an unreadable date" }
        let year = Int(parts.tm_year) + 1900
        let month = Int(parts.tm_mon) + 1
        let twoDigits = { (n: Int) in n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(twoDigits(month))-\(twoDigits(Int(parts.tm_mday)))"
    }

    /// PostgreSQL's `SSLRequest` (length 8, code 80877103): the server answers `S` and TLS begins.
    public static let postgresSSLRequest: [UInt8] = [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F]

    /// The server's leaf certificate after a completed handshake: with `trusting` nil, unchecked;
    /// otherwise checked against that one certificate alone (host name not checked). With
    /// `startTLS`, those bytes go first and TLS begins once the server answers `S`. Nil when the
    /// handshake fails or takes over five seconds.
    static func peerCertificate(host: String, port: Int, trusting: NIOSSLCertificate?, startTLS: [UInt8]? = nil) async -> NIOSSLCertificate? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let trusting {
            configuration.trustRoots = .certificates([trusting])
            configuration.certificateVerification = .noHostnameVerification
        } else {
            configuration.certificateVerification = .none
        }
        // Any failure here (no context, no connection, no handshake within five seconds) means
        // only that looking again did not work: the caller then says less, never something wrong.
        do {
            let context = try NIOSSLContext(configuration: configuration)
            let isAddress: Bool
            do {
                _ = try SocketAddress(ipAddress: host, port: 0)
                isAddress = true
            } catch {
                isAddress = false  // a host name, checked against the certificate by name
            }
            let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        let makeTLS = { try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : host) }
                        if let startTLS {
                            try sync.addHandler(StartTLS(request: startTLS, makeTLS: makeTLS))
                        } else {
                            try sync.addHandler(try makeTLS())
                        }
                        try sync.addHandler(HandshakeWatch(promise: channel.eventLoop.makePromise()))
                    }
                }
            let channel = try await bootstrap.connect(host: host, port: port).get()
            defer { channel.close(promise: nil) }
            let watch = try await channel.pipeline.handler(type: HandshakeWatch.self).get()
            let timer = channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
            defer { timer.cancel() }
            try await watch.promise.futureResult.get()
            return try await channel.nioSSL_peerCertificate().get()
        } catch {
            return nil
        }
    }

    /// Sends a protocol's request for TLS when the connection opens; on the one-byte `S` that
    /// accepts it, puts the TLS handler first in the pipeline and leaves. Any other answer closes.
    final class StartTLS: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let request: [UInt8]
        let makeTLS: () throws -> NIOSSLClientHandler

        init(request: [UInt8], makeTLS: @escaping () throws -> NIOSSLClientHandler) {
            self.request = request
            self.makeTLS = makeTLS
        }

        func channelActive(context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: request)), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var answer = unwrapInboundIn(data)
            guard answer.readableBytes == 1, answer.readInteger(as: UInt8.self) == UInt8(ascii: "S") else {
                context.close(promise: nil)
                return
            }
            do {
                try context.pipeline.syncOperations.addHandler(try makeTLS(), position: .first)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            } catch {
                context.close(promise: nil)
            }
        }
    }

    /// Fulfils its promise when the TLS handshake completes, fails it when the channel errs or
    /// closes first.
    final class HandshakeWatch: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = NIOAny
        let promise: EventLoopPromise<Void>

        init(promise: EventLoopPromise<Void>) { self.promise = promise }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent { promise.succeed(()) }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(ChannelError.ioOnClosedChannel)
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            promise.fail(ChannelError.ioOnClosedChannel)  // a promise is never dropped unfulfilled
        }
    }
}
