import Foundation
import HubHostABI

/// One location as "hubhost.location.v1" answers it, its strings as C text in one block shared by
/// every caller the same location is answered to: each `lend` retains the block's owner and each
/// `release` releases it, and the last release frees it. Copying the id, name and address for
/// each call (three allocations, three frees) and the Swift location with them was most of a
/// location augmentation's call on the host's side.
/// @unchecked Sendable: `block` and `answer` are written once, in init, and only read after.
final class LocationCText: @unchecked Sendable {
    /// [the owner, unretained][id NUL][name NUL][address NUL]: a lent location's `location_id`
    /// always points just past the owner (even when empty), which is how `release` finds it.
    private let block: UnsafeMutableRawPointer
    /// The answer with its strings in `block`.
    private let answer: hh_location_t

    private static let ownerSize = MemoryLayout<UnsafeRawPointer>.stride

    init(_ location: Location) {
        let texts = [location.locationID ?? "", location.name ?? "", location.address ?? ""]
        let size = Self.ownerSize + texts.reduce(0) { $0 + $1.utf8.count + 1 }
        block = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        var strings: [hh_string_t] = []
        var offset = Self.ownerSize
        for var text in texts {
            let start = block + offset
            let length = text.withUTF8 { bytes in
                if let base = bytes.baseAddress { start.copyMemory(from: base, byteCount: bytes.count) }
                return bytes.count
            }
            start.storeBytes(of: 0, toByteOffset: length, as: UInt8.self)
            strings.append(hh_string_t(data: start.assumingMemoryBound(to: CChar.self), length: length))
            offset += length + 1
        }
        var answer = hh_location_t()
        if let latitude = location.latitude, let longitude = location.longitude {
            answer.has_coordinates = true
            answer.latitude = latitude
            answer.longitude = longitude
            answer.accuracy_m = location.accuracyMeters ?? 0
        }
        answer.time_ms = location.timeMs ?? 0
        answer.location_id = strings[0]
        // An empty name or address is length 0 with no bytes, as the header's "length 0: none" reads.
        answer.name = strings[1].length == 0 ? hh_string_t() : strings[1]
        answer.address = strings[2].length == 0 ? hh_string_t() : strings[2]
        self.answer = answer
        block.storeBytes(of: Unmanaged.passUnretained(self).toOpaque(), as: UnsafeMutableRawPointer.self)
    }

    deinit { block.deallocate() }

    /// Fills `out` with the answer, valid until `release(_:)` is called on it.
    func lend(to out: UnsafeMutablePointer<hh_location_t>) {
        _ = Unmanaged.passRetained(self)
        out.pointee = answer
    }

    /// Ends the loan of a location `lend` filled in, and zero-fills it; nothing for a zero-filled one.
    static func release(_ location: UnsafeMutablePointer<hh_location_t>) {
        defer { location.pointee = hh_location_t() }
        guard let text = location.pointee.location_id.data else { return }
        let owner = (UnsafeRawPointer(text) - ownerSize).load(as: UnsafeMutableRawPointer.self)
        Unmanaged<LocationCText>.fromOpaque(owner).release()
    }
}
