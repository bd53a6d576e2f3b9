// Stateless exports (see include/coordscore.h for each contract).
import CCoordsABI
import CPlatform
import CoordsCore

/// The library version reported by coords_version() (static storage, never freed).
nonisolated(unsafe) let libraryVersion: UnsafeMutablePointer<CChar>? = strdup(CoordsVersion.string)

/// The signing counter of the stateless exports: like the managers' (``SignedTime``), so two
/// prepares in the same second carry increasing timestamps.
let statelessSignedTime = SignedClock()

@_cdecl("coords_abi_version")
public func ffiABIVersion() -> UInt32 { COORDS_ABI_VERSION }

@_cdecl("coords_version")
public func ffiVersion() -> CString { UnsafePointer(libraryVersion) }

@_cdecl("coords_error_free")
public func ffiErrorFree(_ error: ErrorOut) {
    guard let error else { return }
    free(error.pointee.message)
    error.pointee.message = nil
    error.pointee.code = COORDS_OK
}

@_cdecl("coords_buffer_free")
public func ffiBufferFree(_ buffer: BufferOut) {
    guard let buffer else { return }
    free(buffer.pointee.data)
    buffer.pointee = CoordsBuffer(data: nil, len: 0)
}

@_cdecl("coords_identity_generate")
public func ffiIdentityGenerate(_ seedOut: UnsafeMutablePointer<UInt8>?, _ publicOut: UnsafeMutablePointer<UInt8>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let seedOut = try Argument.output(seedOut, "seed_out")
        let publicOut = try Argument.output(publicOut, "public_out")
        let key = try Ed25519SigningKey.generate()
        key.seed.withUnsafeBytes { seed in
            if let base = seed.baseAddress { seedOut.update(from: base.assumingMemoryBound(to: UInt8.self), count: 32) }
        }
        Output.copy(key.publicKey.rawRepresentation, to: publicOut)
    }
}

@_cdecl("coords_identity_public_from_seed")
public func ffiIdentityPublicFromSeed(_ seed: UnsafePointer<UInt8>?, _ publicOut: UnsafeMutablePointer<UInt8>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let publicOut = try Argument.output(publicOut, "public_out")
        Output.copy(try Argument.identity(seed).publicKey.rawRepresentation, to: publicOut)
    }
}

@_cdecl("coords_sign")
public func ffiSign(
    _ seed: UnsafePointer<UInt8>?, _ message: UnsafePointer<UInt8>?, _ length: Int, _ signatureOut: UnsafeMutablePointer<UInt8>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let signatureOut = try Argument.output(signatureOut, "sig_out")
        let key = try Argument.identity(seed)
        let bytes = try Argument.bytes(message, length, "msg", maximum: Int(COORDS_MAX_MESSAGE_BYTES))
        Output.copy(key.signature(for: bytes), to: signatureOut)
    }
}

@_cdecl("coords_verify")
public func ffiVerify(
    _ publicKey: UnsafePointer<UInt8>?, _ message: UnsafePointer<UInt8>?, _ length: Int, _ signature: UnsafePointer<UInt8>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let keyBytes = try Argument.fixed(publicKey, 32, "public_key")
        let signatureBytes = try Argument.fixed(signature, 64, "sig")
        let bytes = try Argument.bytes(message, length, "msg", maximum: Int(COORDS_MAX_MESSAGE_BYTES))
        guard let key = try? Ed25519PublicKey(rawRepresentation: keyBytes), key.isValidSignature(signatureBytes, for: bytes) else {
            throw CryptoError.authenticationFailed
        }
    }
}

@_cdecl("coords_blob_seal")
public func ffiBlobSeal(
    _ location: UnsafePointer<CoordsLocation>?, _ recipients: UnsafePointer<UInt8>?, _ count: Int, _ blobOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(blobOut, "blob_out")
        let fix = try Argument.location(location, "location")
        guard count >= 0, count <= Int(COORDS_MAX_RECIPIENTS) else {
            throw WireError.tooManyRecipients(count: count, maximum: Int(COORDS_MAX_RECIPIENTS))
        }
        guard count > 0 else { throw WireError.noRecipients }
        let raw = try Argument.bytes(recipients, count * 32, "recipients", maximum: Int(COORDS_MAX_RECIPIENTS) * 32)
        var keys: [Ed25519PublicKey] = []
        keys.reserveCapacity(count)
        for index in 0..<count {
            guard let key = try? Ed25519PublicKey(rawRepresentation: Array(raw[index * 32..<index * 32 + 32])) else {
                throw WireError.invalidRecipientKey(index: index)
            }
            keys.append(key)
        }
        try Output.write(try LocationBlob.seal(fix.wire, for: keys), to: out)
    }
}

@_cdecl("coords_blob_open")
public func ffiBlobOpen(
    _ seed: UnsafePointer<UInt8>?, _ blob: UnsafePointer<UInt8>?, _ length: Int, _ locationOut: UnsafeMutablePointer<CoordsLocation>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.output(locationOut, "location_out")
        let key = try Argument.identity(seed)
        let bytes = try Argument.bytes(blob, length, "blob", maximum: Int(COORDS_MAX_BLOB_BYTES))
        out.pointee = Record.cLocation(try LocationBlob.open(bytes, with: key).location)
    }
}

@_cdecl("coords_prepare_upload")
public func ffiPrepareUpload(
    _ seed: UnsafePointer<UInt8>?, _ location: UnsafePointer<CoordsLocation>?,
    _ recipientsJSON: CString, _ server: CString,
    _ requestOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(requestOut, "request_json_out")
        let key = try Argument.identity(seed)
        let fix = try Argument.location(location, "location")
        guard let ids = try Argument.json(recipientsJSON, "recipients_json").arrayValue else {
            throw FFIError.invalid("recipients_json must be a JSON array of base64url ids")
        }
        var friends: [Ed25519PublicKey] = []
        for id in ids {
            guard let text = id.stringValue else { throw FFIError.invalid("recipients_json must contain strings only") }
            friends.append(try Ed25519PublicKey(base64URL: text))
        }
        let serverText = try Argument.string(server, "server")
        let blob = try LocationBlob.seal(fix.wire, for: [key.publicKey] + friends)
        let timestamp = statelessSignedTime.next()
        try Output.write(try RelayAPI.prepareUpload(blob: blob, timestamp: timestamp, signer: key, server: serverText).json, to: out)
    }
}

@_cdecl("coords_prepare_fetch")
public func ffiPrepareFetch(_ friendsJSON: CString, _ requestsOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(requestsOut, "requests_json_out")
        guard let friends = try Argument.json(friendsJSON, "friends_json").arrayValue else {
            throw FFIError.invalid("friends_json must be a JSON array of {\"pubkey\",\"server\"}")
        }
        let targets = try friends.map { entry -> RelayAPI.FetchTarget in
            guard let object = entry.objectValue, let id = object["pubkey"]?.stringValue, let server = object["server"]?.stringValue else {
                throw FFIError.invalid("each friend must be an object with string \"pubkey\" and \"server\"")
            }
            return RelayAPI.FetchTarget(id: id, server: server)
        }
        try Output.write(.array(try RelayAPI.prepareFetches(targets).map(Record.fetch)), to: out)
    }
}

@_cdecl("coords_process_fetch_response")
public func ffiProcessFetchResponse(
    _ seed: UnsafePointer<UInt8>?, _ body: UnsafePointer<UInt8>?, _ length: Int, _ resultsOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(resultsOut, "results_json_out")
        let key = try Argument.identity(seed)
        let bytes = try Argument.body(body, length)
        let entries = try RelayAPI.processFetchResponse(bytes, reader: X25519PrivateKey(ed25519: key))
        try Output.write(.array(entries.map(Record.fetchEntry)), to: out)
    }
}

@_cdecl("coords_friend_link_generate")
public func ffiFriendLinkGenerate(_ publicKey: UnsafePointer<UInt8>?, _ server: CString, _ name: CString, _ linkOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(linkOut, "link_out")
        let key = try Argument.publicKey(publicKey, "public_key")
        let link = FriendLink(publicKey: key, server: try Argument.string(server, "server"), name: try Argument.string(name, "name"))
        try Output.write(link.link, to: out)
    }
}

@_cdecl("coords_push_gateway_endpoint")
public func ffiPushGatewayEndpoint(
    _ gatewayURL: CString, _ gatewayKey: CString, _ platform: CString, _ device: CString, _ environment: CString, _ endpointOut: BufferOut,
    _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(endpointOut, "endpoint_out")
        let url = try Argument.string(gatewayURL, "gateway_url")
        let keyText = try Argument.string(gatewayKey, "gateway_key_b64u")
        // Any bad key (not base64url, not 32 bytes) is one INVALID_ARGUMENT, thrown below.
        // Not base64url, not 32 bytes, or not a usable key: the one INVALID_ARGUMENT error below says which input.
        guard let keyBytes = try? Base64.decode(keyText, field: "gateway_key_b64u"), keyBytes.count == X25519PublicKey.byteCount,
            let key = try? X25519PublicKey(rawRepresentation: keyBytes)
        else {
            throw FFIError.invalid("gateway_key_b64u is not 32 bytes of base64url")
        }
        let platformName = try Argument.string(platform, "platform")
        guard let kind = PushGatewayToken.Platform(rawValue: platformName) else { throw FFIError.invalid("platform must be \"apns\" or \"fcm\"") }
        let environment = try Argument.optionalString(environment, "environment").map { name -> PushGatewayToken.Environment in
            guard let known = PushGatewayToken.Environment(rawValue: name) else {
                throw FFIError.invalid("environment must be \"production\", \"development\" or NULL")
            }
            return known
        }
        let token = try PushGatewayToken(platform: kind, device: try Argument.string(device, "device"), environment: environment)
        try Output.write(try token.endpoint(gateway: url, key: key), to: out)
    }
}

@_cdecl("coords_public_key_b64url")
public func ffiPublicKeyB64URL(_ publicKey: UnsafePointer<UInt8>?, _ textOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(textOut, "text_out")
        try Output.write(try Argument.publicKey(publicKey, "public_key").base64URL, to: out)
    }
}

@_cdecl("coords_qr_encode")
public func ffiQREncode(_ text: CString, _ modulesOut: BufferOut, _ sizeOut: UnsafeMutablePointer<UInt32>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(modulesOut, "modules_out")
        let size = try Argument.output(sizeOut, "size_out")
        let code = try QRCode(text: try Argument.string(text, "text"))
        try Output.write(code.modules.map { $0 ? 1 : 0 }, to: out)
        size.pointee = UInt32(clamping: code.size)
    }
}

@_cdecl("coords_qr_svg")
public func ffiQRSVG(_ text: CString, _ modulePixels: UInt32, _ svgOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(svgOut, "svg_out")
        guard (1...64).contains(modulePixels) else { throw FFIError.invalid("module_pixels must be 1…64") }
        let code = try QRCode(text: try Argument.string(text, "text"))
        try Output.write(code.svg(modulePixels: Int(modulePixels)), to: out)
    }
}

@_cdecl("coords_friend_link_parse")
public func ffiFriendLinkParse(_ link: CString, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(jsonOut, "json_out")
        let parsed = try FriendLink.parse(try Argument.string(link, "link"))
        try Output.write(.object(["pubkey": .string(parsed.id), "server": .string(parsed.server), "name": .string(parsed.name)]), to: out)
    }
}

@_cdecl("coords_safety_number")
public func ffiSafetyNumber(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ textOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(textOut, "text_out")
        try Output.write(SafetyNumber.compute(try Argument.fixed(a, 32, "public_a"), try Argument.fixed(b, 32, "public_b")), to: out)
    }
}

@_cdecl("coords_may_reuse_location")
public func ffiMayReuseLocation(
    _ location: UnsafePointer<CoordsLocation>?, _ now: UInt64, _ reason: CString, _ result: UnsafeMutablePointer<Bool>?, _ error: ErrorOut
) -> Int32 {
    exported(error) {
        let out = try Argument.output(result, "out")
        let fix = try Argument.location(location, "fix")
        let text = try Argument.string(reason, "reason")
        guard let reason = UploadReason(rawValue: text) else { throw FFIError.invalid("reason must be \"explicit\", \"launch\" or \"background\"") }
        out.pointee = LocationManager.mayReuse(fix, now: now, reason: reason)
    }
}

@_cdecl("coords_may_reuse_fix")
public func ffiMayReuseFix(_ fixTimestamp: UInt64, _ now: UInt64, _ reason: CString, _ result: UnsafeMutablePointer<Bool>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(result, "out")
        let text = try Argument.string(reason, "reason")
        guard let reason = UploadReason(rawValue: text) else { throw FFIError.invalid("reason must be \"explicit\", \"launch\" or \"background\"") }
        out.pointee = LocationManager.mayReuseFix(fixTimestamp: fixTimestamp, now: now, reason: reason)
    }
}
