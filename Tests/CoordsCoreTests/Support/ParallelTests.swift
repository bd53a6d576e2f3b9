import Synchronization
import Testing

@testable import CoordsCore

/// Work spread over the cores (group copies' signatures, a mailbox answer's signature checks):
/// the same results, in the same order, as one thread would give — and ahead-of-time signature
/// checks that can only ever repeat libsodium's answer for the very same bytes.
@Suite struct ParallelTests {
    @Test func resultsComeBackInOrderWhateverTheSplit() {
        for count in [0, 1, 2, 3, 5, 7, 8, 63, 255, 256] {
            for share in [0, 1, 3, 4, 100] {
                let squares = Parallel.map(count, minimumShare: share) { $0 * $0 }
                #expect(squares == (0..<count).map { $0 * $0 }, "count \(count), share \(share)")
            }
        }
        #expect(Parallel.workers >= 1 && Parallel.workers <= 4)
    }

    @Test func everyItemIsComputedOnce() {
        let calls = Mutex(0)
        let items = Parallel.map(257, minimumShare: 1) { index -> Int in
            calls.withLock { $0 += 1 }
            return index
        }
        #expect(items == Array(0..<257) && calls.withLock { $0 } == 257)
    }

    @Test func aMemoRemembersOnlyValidSignaturesForTheExactBytes() throws {
        let signer = try Ed25519SigningKey.generate()
        let other = try Ed25519SigningKey.generate()
        let messages = (0..<12).map { Array("message \($0)".utf8) }
        var checks = messages.map { SignatureMemo.Check(key: signer.publicKey, signature: signer.signature(for: $0), message: $0) }
        // Two that are not valid: a signature over other bytes, and another key's signature.
        checks.append(SignatureMemo.Check(key: signer.publicKey, signature: signer.signature(for: messages[0]), message: messages[1]))
        checks.append(SignatureMemo.Check(key: signer.publicKey, signature: other.signature(for: messages[2]), message: messages[2]))
        let memo = SignatureMemo(verifying: checks)
        #expect(memo.count == 12)
        for message in messages { #expect(memo.isValid(signer.signature(for: message), by: signer.publicKey, for: message)) }
        // Whatever was not remembered is checked on the spot, and refused as libsodium refuses it.
        #expect(!memo.isValid(signer.signature(for: messages[0]), by: signer.publicKey, for: messages[1]))
        #expect(!memo.isValid(other.signature(for: messages[2]), by: signer.publicKey, for: messages[2]))
        #expect(!memo.isValid(signer.signature(for: messages[3]), by: other.publicKey, for: messages[3]))
        var flipped = messages[4]
        flipped[0] ^= 1
        #expect(!memo.isValid(signer.signature(for: messages[4]), by: signer.publicKey, for: flipped))
        // An empty memo answers the same, by checking.
        #expect(SignatureMemo().isValid(signer.signature(for: messages[5]), by: signer.publicKey, for: messages[5]))
        #expect(SignatureMemo(verifying: []).count == 0)
    }
}
