// The live channel's client side (PROTOCOL.md §8) at the C ABI: the host owns the WebSocket;
// these functions say where to connect, what to send, what a frame means and when to reconnect.
import CCoordsABI
import CoordsCore

@_cdecl("coords_live_connections")
public func ffiLiveConnections(_ handle: Handle, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        JSONValue.array(try app.live.connections().map(Record.liveConnection))
    }
}

@_cdecl("coords_live_opened")
public func ffiLiveOpened(_ handle: Handle, _ server: CString, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        Record.liveOpened(try app.live.opened(server: try Argument.string(server, "server")))
    }
}

@_cdecl("coords_live_process")
public func ffiLiveProcess(
    _ handle: Handle, _ server: CString, _ frame: UnsafePointer<UInt8>?, _ length: Int, _ eventOut: BufferOut, _ error: ErrorOut
) -> Int32 {
    returning(eventOut, "event_json_out", app: handle, error) { app in
        let server = try Argument.string(server, "server")
        let bytes = try Argument.bytes(frame, length, "frame", maximum: LiveFrame.maximumFrameBytes)
        return Record.liveEvent(try blocking { try await app.live.process(server: server, frame: bytes) })
    }
}

@_cdecl("coords_live_closed")
public func ffiLiveClosed(_ handle: Handle, _ server: CString, _ closeCode: Int32, _ upgradeStatus: Int32, _ nextOut: BufferOut, _ error: ErrorOut)
    -> Int32
{
    returning(nextOut, "next_json_out", app: handle, error) { app in
        let next = app.live.closed(
            server: try Argument.string(server, "server"), code: closeCode > 0 ? Int(closeCode) : nil,
            upgradeStatus: upgradeStatus > 0 ? Int(upgradeStatus) : nil)
        switch next {
        case .poll: return JSONValue.object(["action": .string("poll")])
        case .reconnect(let milliseconds): return JSONValue.object(["action": .string("reconnect"), "after_ms": .integer(milliseconds)])
        }
    }
}

@_cdecl("coords_live_stopped")
public func ffiLiveStopped(_ handle: Handle, _ server: CString, _ error: ErrorOut) -> Int32 {
    withApp(handle, error) { app in app.live.stopped(server: try Argument.string(server, "server")) }
}

@_cdecl("coords_live_mailbox_fetched")
public func ffiLiveMailboxFetched(_ handle: Handle, _ server: CString, _ jsonOut: BufferOut, _ error: ErrorOut) -> Int32 {
    returning(jsonOut, "json_out", app: handle, error) { app in
        Record.optional(try app.live.mailboxFetched(server: try Argument.string(server, "server")), Record.request)
    }
}
