import CoordsTLS
import Foundation
import NIOSSL
import Testing

/// The trust store every TLS client of ours uses (`SSL_CERT_FILE`), and how a refused
/// certificate is recognised. The certificates themselves are refused end to end in
/// tests/e2e/test_https.py (nginx with a throwaway authority).
@Suite struct TrustStoreTests {
    /// A directory with `ca.pem` (a self-signed certificate made by openssl) and `empty.pem`.
    static func files() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trust-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let status = try Self.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=trust test", "-days", "2",
                "-keyout", directory.appendingPathComponent("ca.key").path, "-out", directory.appendingPathComponent("ca.pem").path
            ])
        #expect(status == 0)
        try Data("no certificate here\n".utf8).write(to: directory.appendingPathComponent("empty.pem"))
        return directory
    }

    /// Runs `executable` to its end with its output discarded and returns its wait status. Not
    /// Foundation's Process: its `waitUntilExit` can wait forever for a child that already
    /// exited, which would hold one of the test process's few cooperative threads.
    static func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    @Test func withoutTheVariableTheSystemStoreIsUsed() throws {
        let configuration = try TrustStore.clientConfiguration(environment: [:])
        #expect(configuration.trustRoots == nil || configuration.trustRoots == .default)
        #expect(configuration.certificateVerification == .fullVerification)
        #expect(try TrustStore.clientConfiguration(environment: ["SSL_CERT_FILE": ""]).trustRoots == configuration.trustRoots)
    }

    @Test func theNamedBundleReplacesTheSystemStore() throws {
        let directory = try Self.files()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ca.pem").path
        let configuration = try TrustStore.clientConfiguration(environment: ["SSL_CERT_FILE": path])
        #expect(configuration.trustRoots == .certificates(try NIOSSLCertificate.fromPEMFile(path)))
        #expect(configuration.certificateVerification == .fullVerification)
        _ = try NIOSSLContext(configuration: configuration)  // usable as it is
    }

    @Test func anUnusableBundleIsNamedInOneLine() throws {
        let directory = try Self.files()
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["missing.pem", "empty.pem", ""] {
            let path = directory.appendingPathComponent(name).path  // "" is the directory itself
            do {
                _ = try TrustStore.clientConfiguration(environment: ["SSL_CERT_FILE": path])
                Issue.record("\(path) must be refused")
            } catch let error as TrustStoreError {
                #expect(error.description.hasPrefix("SSL_CERT_FILE names \(path), which"), "\(error)")
                #expect(!error.description.contains("\n"))
            }
        }
    }

    @Test func certificateRefusalsAreToldFromOtherFailures() {
        #expect(CertificateDiagnosis.isCertificateRefusal(NIOSSLExtraError.failedToValidateHostname))
        #expect(CertificateDiagnosis.isCertificateRefusal(NIOSSLError.handshakeFailed(.sslError([]))) == false)
        #expect(CertificateDiagnosis.isCertificateRefusal(CocoaError(.fileNoSuchFile)) == false)
        #expect(CertificateDiagnosis.postgresSSLRequest == [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F])  // 8, 80877103
    }

    /// Nothing listens: the diagnosis still answers with a sentence (never hangs, never throws).
    @Test func aDiagnosisWithoutAServerIsStillASentence() async {
        let sentence = await CertificateDiagnosis.explain(
            NIOSSLError.handshakeFailed(.sslError([])), host: "127.0.0.1", port: 1, environment: [:])
        #expect(sentence == "the relay's certificate was refused; " + TrustStore.advice)
    }
}
