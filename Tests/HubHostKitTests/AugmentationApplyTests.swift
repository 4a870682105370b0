import HubHostABI
import XCTest

@testable import HubHostKit

/// A literal as a plugin hands the editor a string.
private func text(_ s: StaticString) -> hh_string_t {
    hh_string_t(data: UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self), length: s.utf8CodeUnitCount)
}

/// `AugmentationTimeline.apply`: the shortcut for an edit session's output (appended attributes
/// appended directly when the working event still holds the input's attributes) gives the same
/// event as setting each attribute by name, in every case the shortcut can meet.
final class AugmentationApplyTests: XCTestCase {
    private func event(_ attributes: [Event.Attribute]) -> Event {
        Event(id: "e", type: .namedEvent, name: "N", timestampMs: 1_700_000_000_000, attributes: attributes)
    }

    private func output(_ input: Event, _ attributes: [(String, PluginValue)]) -> AugmentableEvent {
        var output = input.augmentable
        output.attributes = attributes.map { (name: $0.0, value: $0.1) }
        return output
    }

    /// Applies `edited` over `input` to `working` both ways and checks they agree; returns the result.
    private func applyBothWays(
        _ edited: AugmentableEvent, over input: Event, to working: Event,
        file: StaticString = #filePath, line: UInt = #line
    ) -> Event {
        var bySet = working
        var byShortcut = working
        AugmentationTimeline.apply(AugmentationOutcome(status: 0, message: "", event: edited), over: input, to: &bySet)
        AugmentationTimeline.apply(
            AugmentationOutcome(status: 0, message: "", event: edited, appendsOnlyNewNames: true), over: input, to: &byShortcut)
        XCTAssertEqual(byShortcut, bySet, file: file, line: line)
        return byShortcut
    }

    func testAppendedAttributesLandAfterTheInputsInOrder() {
        let input = event([.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        let edited = output(input, [("Level", .int(1)), ("Mode", .string("arcade")), ("Latitude", .double(47.6)), ("Longitude", .double(-122.3))])
        let done = applyBothWays(edited, over: input, to: input)
        XCTAssertEqual(done.attributes.map(\.name), ["Level", "Mode", "Latitude", "Longitude"])
        XCTAssertEqual(done[attribute: "Longitude"], .double(-122.3))
        XCTAssertEqual(input.attributes.count, 2, "the input is not changed")
    }

    func testAnEmptyInputAndNoEdits() {
        let input = event([])
        XCTAssertEqual(applyBothWays(output(input, [("A", .bool(true))]), over: input, to: input).attributes.map(\.name), ["A"])
        XCTAssertEqual(applyBothWays(output(input, []), over: input, to: input).attributes, [])
    }

    /// A working event already changed by an earlier plugin of the stage (not the input's storage):
    /// the appended name it has already is replaced in place, not added twice.
    func testAWorkingEventChangedSinceTheInputIsSetByName() {
        let input = event([.init("Level", .int(1))])
        var working = input
        working.set("Latitude", .double(1))
        let done = applyBothWays(
            output(input, [("Level", .int(1)), ("Latitude", .double(2)), ("Weather", .string("rain"))]), over: input, to: working)
        XCTAssertEqual(done.attributes.map(\.name), ["Level", "Latitude", "Weather"])
        XCTAssertEqual(done[attribute: "Latitude"], .double(2))
    }

    /// Changed or removed input attributes take the general path, whatever the session vouches.
    func testChangedAndRemovedAttributesTakeTheGeneralPath() {
        let input = event([.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        let changed = applyBothWays(output(input, [("Level", .int(2)), ("Mode", .string("arcade")), ("New", .null)]), over: input, to: input)
        XCTAssertEqual(changed.attributes.map(\.name), ["Level", "Mode", "New"])
        XCTAssertEqual(changed[attribute: "Level"], .int(2))
        let removed = applyBothWays(output(input, [("Mode", .string("arcade"))]), over: input, to: input)
        XCTAssertEqual(removed.attributes.map(\.name), ["Mode"])
    }

    /// Through a real edit session: the edits of a plugin that sets, replaces and removes come out
    /// the same both ways (the session's output is what the shortcut trusts).
    func testAnEditSessionsOutputAppliesTheSameBothWays() {
        let input = event([.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        let session = EventEditSession(input.augmentable)
        defer { session.release() }
        var value = hh_value_t()
        value.type = HH_VALUE_INT64
        value.of.int64 = 7
        XCTAssertEqual(session.set(text("Added"), &value), HH_OK)
        XCTAssertEqual(session.set(text("Other"), &value), HH_OK)
        XCTAssertEqual(session.remove(text("Added")), HH_OK)
        value.of.int64 = 8
        XCTAssertEqual(session.set(text("Added"), &value), HH_OK)
        XCTAssertEqual(session.set(text("Other"), &value), HH_OK, "replaced in place")
        let done = applyBothWays(session.working, over: input, to: input)
        XCTAssertEqual(done.attributes.map(\.name), ["Level", "Mode", "Other", "Added"])
        XCTAssertEqual(done[attribute: "Other"], .int(8))
    }

    /// A session that only appended answers its attributes apart, leaving the given ones as they
    /// were (also after replacing or removing one of its own), and applying them gives the same
    /// event as the general path; after an edit in place or a removal of a given attribute it
    /// answers a whole edited event.
    func testAnAppendingSessionAnswersItsAttributesApart() {
        let input = event([.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        var value = hh_value_t()
        value.type = HH_VALUE_INT64
        value.of.int64 = 7
        let appending = EventEditSession(input.augmentable)
        defer { appending.release() }
        XCTAssertEqual(appending.set(text("Added"), &value), HH_OK)
        XCTAssertEqual(appending.set(text("Other"), &value), HH_OK)
        XCTAssertEqual(appending.set(text("Gone"), &value), HH_OK)
        XCTAssertEqual(appending.remove(text("Gone")), HH_OK)
        value.of.int64 = 8
        XCTAssertEqual(appending.set(text("Added"), &value), HH_OK, "one of its own, in place")
        XCTAssertEqual(appending.count, 4)
        XCTAssertEqual(appending.appended, [.init("Added", .int(8)), .init("Other", .int(7))])
        XCTAssertEqual(appending.original, input.augmentable)
        let apart = AugmentationAnswer.appended(appending.appended ?? [])
        var byAppending = input
        AugmentationTimeline.apply(apart, over: input, to: &byAppending)
        var alone = input
        AugmentationTimeline.apply(apart, toItsInput: &alone)
        var bySet = input
        AugmentationTimeline.apply(AugmentationOutcome(status: 0, message: "", event: appending.working), over: input, to: &bySet)
        XCTAssertEqual(byAppending, bySet)
        XCTAssertEqual(alone, bySet)
        XCTAssertEqual(bySet.attributes.map(\.name), ["Level", "Mode", "Added", "Other"])
        XCTAssertEqual(input.attributes.count, 2, "the input is not changed")

        let edits: [(EventEditSession) -> Void] = [
            { _ = $0.set(text("Level"), &value) },  // a given attribute, in place
            { _ = $0.remove(text("Mode")) }
        ]
        for (i, edit) in edits.enumerated() {
            let session = EventEditSession(input.augmentable)
            XCTAssertEqual(session.set(text("Before"), &value), HH_OK)
            edit(session)
            XCTAssertEqual(session.set(text("After"), &value), HH_OK)
            XCTAssertNil(session.appended, "edit \(i)")
            XCTAssertEqual(session.working.list.suffix(2).map(\.name), ["Before", "After"], "edit \(i)")
            XCTAssertEqual(session.original, input.augmentable, "edit \(i)")
            session.release()
        }
    }

    /// A failed call answers the event as it was given: the session never changes it (appended
    /// attributes are kept apart, an edit in place goes to a copy), whatever came before or after
    /// that edit.
    func testAnEditSessionAnswersTheEventAsGivenAfterAnyEdits() {
        let input = event([.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        var value = hh_value_t()
        value.type = HH_VALUE_INT64
        value.of.int64 = 7
        let edits: [(EventEditSession) -> Void] = [
            { _ in },
            { session in _ = session.set(text("Added"), &value) },
            { session in
                _ = session.set(text("Added"), &value)
                _ = session.set(text("Level"), &value)
                _ = session.set(text("Later"), &value)
            },
            { session in
                _ = session.set(text("Added"), &value)
                _ = session.remove(text("Mode"))
                _ = session.remove(text("Added"))
            },
            { session in _ = session.remove(text("Level")) },
            { session in _ = session.remove(text("Missing")) }
        ]
        for (index, edit) in edits.enumerated() {
            let session = EventEditSession(input.augmentable)
            edit(session)
            XCTAssertEqual(session.original, input.augmentable, "edits \(index)")
            session.release()
        }
    }

    /// At the attribute limit a plugin may still replace an attribute, never add one.
    func testAnEditSessionAtTheLimitReplacesButDoesNotAdd() {
        let full = event((0..<EventLimits.maxAttributes).map { .init("a\($0)", .int(Int64($0))) })
        let session = EventEditSession(full.augmentable)
        defer { session.release() }
        var value = hh_value_t()
        value.type = HH_VALUE_INT64
        value.of.int64 = -1
        let last = "a\(EventLimits.maxAttributes - 1)"
        let replaced = last.withCString { session.set(hh_string_t(data: $0, length: last.utf8.count), &value) }
        XCTAssertEqual(replaced, HH_OK)
        let added = "one more".withCString { session.set(hh_string_t(data: $0, length: 8), &value) }
        XCTAssertEqual(added, HH_ERR_INVALID_ARGUMENT)
        XCTAssertEqual(session.working.attributes.count, EventLimits.maxAttributes)
        XCTAssertEqual(session.working[attribute: last], .int(-1))
        XCTAssertNil(session.working[attribute: "one more"])
    }

    /// An event handed to a plugin shares the engine's attributes: the session's edits never show
    /// in the event it was made from, nor in another session made from the same event.
    func testAnEditSessionNeverChangesTheEventItWasMadeFrom() {
        let input = event([.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        let first = EventEditSession(input.augmentable)
        let second = EventEditSession(input.augmentable)
        defer {
            first.release()
            second.release()
        }
        var value = hh_value_t()
        value.type = HH_VALUE_INT64
        value.of.int64 = 9
        XCTAssertEqual("Added".withCString { first.set(hh_string_t(data: $0, length: 5), &value) }, HH_OK)
        XCTAssertEqual("Level".withCString { second.set(hh_string_t(data: $0, length: 5), &value) }, HH_OK)
        XCTAssertEqual(input.attributes, [.init("Level", .int(1)), .init("Mode", .string("arcade"))])
        XCTAssertEqual(first.working.list, [.init("Level", .int(1)), .init("Mode", .string("arcade")), .init("Added", .int(9))])
        XCTAssertEqual(second.working.list, [.init("Level", .int(9)), .init("Mode", .string("arcade"))])
    }

    /// A set or get by name finds the given attribute of exactly that name (the search skips
    /// names of another length before comparing): a name of the same length as a given one but
    /// absent is appended, one 64 bytes longer than a given one too, and a given name is
    /// replaced in place and read back.
    func testASessionFindsGivenNamesWhateverTheirLengths() {
        let long = String(repeating: "L", count: 66)  // 64 bytes longer than "ab"
        let input = event([.init("ab", .int(1)), .init("Mode", .string("arcade")), .init(long, .int(3))])
        let names = AttributeNames()  // kept for as long as the session, as a plugin keeps its own
        let session = EventEditSession(input.augmentable, names: names)
        defer {
            session.release()
            withExtendedLifetime(names) {}
        }
        func set(_ name: String, _ number: Int64) -> Int32 {
            var value = hh_value_t()
            value.type = HH_VALUE_INT64
            value.of.int64 = number
            return name.withCString { session.set(hh_string_t(data: $0, length: name.utf8.count), &value) }
        }
        func get(_ name: String) -> Int64? {
            var value = hh_value_t()
            let status = name.withCString { session.attribute(named: hh_string_t(data: $0, length: name.utf8.count), &value) }
            return status == HH_OK && value.type == HH_VALUE_INT64 ? value.of.int64 : nil
        }
        XCTAssertEqual(set("cd", 4), HH_OK)  // the length of "ab", absent
        let other = String(repeating: "x", count: 66)
        XCTAssertEqual(set(other, 5), HH_OK)  // the length of `long`, absent
        XCTAssertEqual(set("abc", 6), HH_OK)  // a length no given name has
        XCTAssertEqual(get("ab"), 1)
        XCTAssertEqual(get(long), 3)
        XCTAssertNil(get("zz"))
        XCTAssertEqual(set(long, 7), HH_OK)  // given: replaced in place
        XCTAssertEqual(get(long), 7)
        XCTAssertEqual(
            session.working.list,
            [
                .init("ab", .int(1)), .init("Mode", .string("arcade")), .init(long, .int(7)), .init("cd", .int(4)), .init(other, .int(5)),
                .init("abc", .int(6))
            ])
        XCTAssertEqual(input.attributes.count, 3, "the given event is not changed")
    }

    /// Sessions of one plugin share its kept names: a name set again is the kept String, a name
    /// that is not UTF-8 is refused and not kept, and no more than the capacity are kept.
    func testAPluginsKeptNamesAreValidatedOnceAndBounded() {
        let names = AttributeNames()
        let input = event([])
        var value = hh_value_t()
        value.type = HH_VALUE_BOOL
        value.of.boolean = true
        for round in 0..<3 {
            let session = EventEditSession(input.augmentable, names: names)
            XCTAssertEqual("Temperature C".withCString { session.set(hh_string_t(data: $0, length: 13), &value) }, HH_OK)
            let invalid: [CChar] = [0x41, -1, 0x42]  // "A", 0xFF, "B"
            XCTAssertEqual(
                invalid.withUnsafeBufferPointer { session.set(hh_string_t(data: $0.baseAddress, length: 3), &value) }, HH_ERR_INVALID_ARGUMENT)
            XCTAssertEqual(session.working.list.map(\.name), ["Temperature C"], "round \(round)")
            session.release()
        }
        XCTAssertEqual(names.count, 1, "kept once, and the invalid name not at all")
        let many = EventEditSession(input.augmentable, names: names)
        defer { many.release() }
        for i in 0..<(AttributeNames.capacity * 2) {
            let name = "n\(i)"
            XCTAssertEqual(name.withCString { many.set(hh_string_t(data: $0, length: name.utf8.count), &value) }, HH_OK)
        }
        XCTAssertEqual(names.count, AttributeNames.capacity)
        XCTAssertEqual(many.working.list.count, AttributeNames.capacity * 2, "a name not kept is still set")
        let long = String(repeating: "x", count: AttributeNames.maxLength + 1)
        XCTAssertEqual(long.withCString { many.set(hh_string_t(data: $0, length: long.utf8.count), &value) }, HH_OK)
        XCTAssertEqual(many.working[attribute: long], .bool(true))
    }
    /// A text value set again with the same bytes under a kept name is the String made the first
    /// time (the same storage, so the store's encoding can copy its JSON); a changed value, one
    /// that is not UTF-8, and values that change at every call each give their own text.
    func testAPluginsRepeatedTextValueIsTheKeptString() throws {
        let names = AttributeNames()
        let input = event([])
        func set(_ session: EventEditSession, _ name: String, _ bytes: [UInt8]) -> Int32 {
            bytes.withUnsafeBufferPointer { valueBytes in
                var value = hh_value_t()
                value.type = HH_VALUE_STRING
                value.of.string = hh_string_t(
                    data: UnsafeRawPointer(valueBytes.baseAddress!).assumingMemoryBound(to: CChar.self), length: bytes.count)
                return name.withCString { session.set(hh_string_t(data: $0, length: name.utf8.count), &value) }
            }
        }
        func storage(_ value: PluginValue?) -> UnsafePointer<UInt8>? {
            guard case .string(let text) = value else { return nil }
            return text.utf8.withContiguousStorageIfAvailable { $0.baseAddress } ?? nil
        }
        let place = "Pike Place Market, Seattle"  // longer than a String holds inline
        var values: [PluginValue?] = []  // every value alive until compared: a freed String's storage could be reused
        for _ in 0..<3 {
            let session = EventEditSession(input.augmentable, names: names)
            XCTAssertEqual(set(session, "Place", Array(place.utf8)), HH_OK)
            XCTAssertEqual(session.working[attribute: "Place"], .string(place))
            values.append(session.working[attribute: "Place"])
            session.release()
        }
        let kept = values.map(storage)
        XCTAssertNotNil(kept[0])
        XCTAssertEqual(kept[1], kept[0], "the same bytes give the kept String")
        XCTAssertEqual(kept[2], kept[0])

        let session = EventEditSession(input.augmentable, names: names)
        defer {
            session.release()
            withExtendedLifetime(names) {}  // a session does not keep its names alive: the plugin does
        }
        XCTAssertEqual(set(session, "Place", [0x41, 0xFF, 0x42]), HH_ERR_INVALID_ARGUMENT, "not UTF-8")
        XCTAssertEqual(set(session, "Place", Array("Space Needle, Seattle, WA".utf8)), HH_OK)
        XCTAssertEqual(session.working[attribute: "Place"], .string("Space Needle, Seattle, WA"))
        for i in 0..<(AttributeNames.maxValueMisses * 3) {
            let text = "a value that changes at every call: \(i)"
            XCTAssertEqual(set(session, "Counter", Array(text.utf8)), HH_OK)
            XCTAssertEqual(session.working[attribute: "Counter"], .string(text))
        }
        let long = String(repeating: "é", count: AttributeNames.maxValueLength)  // too long to keep
        XCTAssertEqual(set(session, "Place", Array(long.utf8)), HH_OK)
        XCTAssertEqual(session.working[attribute: "Place"], .string(long))
    }
}
