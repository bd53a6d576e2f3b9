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
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=trust test", "-days", "2",
            "-keyout", directory.appendingPathComponent("ca.key").path, "-out", directory.appendingPathComponent("ca.pem").path
        ]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)
        try Data("no certificate here\n".utf8).write(to: directory.appendingPathComponent("empty.pem"))
        return directory
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
