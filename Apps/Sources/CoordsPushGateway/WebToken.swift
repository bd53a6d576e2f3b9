import CoordsCore
import Crypto
import Foundation
import _CryptoExtras

/// The JSON Web Tokens the providers ask for (RFC 7515 compact serialisation, RFC 7519 claims):
/// `base64url(header) "." base64url(claims) "." base64url(signature)`, without padding.
/// - APNs: ES256 (ECDSA P-256 with SHA-256, the signature as r ‖ s, 64 bytes; RFC 7518 section 3.4),
///   header `{"alg":"ES256","kid":<key id>}`, claims `{"iss":<team id>,"iat":<seconds>}`.
/// - FCM's OAuth2 service-account assertion: RS256 (RSASSA-PKCS1-v1_5 with SHA-256; RFC 7518
///   section 3.3), claims `iss`, `scope`, `aud` (the token URI), `iat`, `exp` (RFC 7523).
enum WebToken {
    /// `header` and `claims` (JSON objects, members sorted) signed by `sign`, which gets the
    /// signing input `base64url(header) "." base64url(claims)`.
    static func compact(header: [String: JSONMember], claims: [String: JSONMember], sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64.encode(Array(json(header).utf8)) + "." + Base64.encode(Array(json(claims).utf8))
        return input + "." + Base64.encode(try sign(Array(input.utf8)))
    }

    /// A member of a header or claims object: text or a whole number.
    enum JSONMember {
        case text(String)
        case number(UInt64)
    }

    /// A flat JSON object with its members in key order.
    static func json(_ members: [String: JSONMember]) -> String {
        var object = JSONObject()
        for (key, member) in members.sorted(by: { $0.key < $1.key }) {
            switch member {
            case .text(let text): object[key] = .string(text)
            case .number(let number): object[key] = .integer(number)
            }
        }
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }

    /// An ES256 token from a P-256 key (APNs provider authentication tokens).
    static func es256(key: P256.Signing.PrivateKey, header: [String: JSONMember], claims: [String: JSONMember]) throws -> String {
        try compact(header: header.merging(["alg": .text("ES256")]) { _, new in new }, claims: claims) { input in
            Array(try key.signature(for: input).rawRepresentation)
        }
    }

    /// An RS256 token from an RSA key (the OAuth2 JWT-bearer assertion of a service account).
    static func rs256(key: _RSA.Signing.PrivateKey, header: [String: JSONMember], claims: [String: JSONMember]) throws -> String {
        try compact(header: header.merging(["alg": .text("RS256"), "typ": .text("JWT")]) { _, new in new }, claims: claims) { input in
            Array(try key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        }
    }
}
