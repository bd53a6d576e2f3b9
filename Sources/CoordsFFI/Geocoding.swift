import CCoordsABI
import CoordsCore

/// Loaded CGEO files behind `CoordsPlaces *` handles (kind 0xB).
let placeIndexes = HandleTable<PlaceIndex>(kind: 0xB)

/// Validates a coordinate pair and an accuracy, then writes the nearest place as JSON.
private func writeNearest(
    _ index: PlaceIndex, _ latitude: Double, _ longitude: Double, _ accuracy: Double,
    _ out: UnsafeMutablePointer<CoordsBuffer>
) throws {
    guard accuracy.isFinite, accuracy >= 0 else { throw FFIError.invalid("accuracy_m must be a finite number ≥ 0") }
    let place = try index.nearestPlace(latitude: latitude, longitude: longitude)
    try Output.write(Record.place(place, accuracyMetres: accuracy), to: out)
}

@_cdecl("coords_geocode_nearest")
public func ffiGeocodeNearest(_ latitude: Double, _ longitude: Double, _ accuracy: Double, _ placeOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(placeOut, "place_json_out")
        try writeNearest(try PlaceIndex.bundled(), latitude, longitude, accuracy, out)
    }
}

@_cdecl("coords_places_open")
public func ffiPlacesOpen(_ path: CString, _ out: UnsafeMutablePointer<OpaquePointer?>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let handleOut = try Argument.output(out, "places_out")
        handleOut.pointee = nil
        let index = try PlaceIndex(contentsOfFile: try Argument.string(path, "path"))
        handleOut.pointee = placeIndexes.insert(index)
    }
}

@_cdecl("coords_places_nearest")
public func ffiPlacesNearest(_ handle: Handle, _ latitude: Double, _ longitude: Double, _ accuracy: Double, _ placeOut: BufferOut, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.buffer(placeOut, "place_json_out")
        try writeNearest(try placeIndexes.get(handle, "places"), latitude, longitude, accuracy, out)
    }
}

@_cdecl("coords_places_count")
public func ffiPlacesCount(_ handle: Handle, _ countOut: UnsafeMutablePointer<UInt64>?, _ error: ErrorOut) -> Int32 {
    exported(error) {
        let out = try Argument.output(countOut, "count_out")
        out.pointee = UInt64(try placeIndexes.get(handle, "places").count)
    }
}

@_cdecl("coords_places_close")
public func ffiPlacesClose(_ handle: Handle, _ error: ErrorOut) -> Int32 {
    exported(error) {
        guard handle != nil else { return }
        _ = try placeIndexes.remove(handle, "places")
    }
}
