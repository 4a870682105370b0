import Foundation
import NIOCore
import Synchronization

/// A hub page rendered once and kept as immutable bytes, with the few per-session bits left out:
/// the session id (`<body data-session="...">`) and hubhost's chrome (back and forward enabled or
/// not) are spliced in per request, in constant time, so that one rendering serves every session
/// that shows the same page.
package struct RenderedHubPage: Sendable {
    /// From `<!DOCTYPE html>` to `data-session="`.
    let head: [UInt8]
    /// From the end of the session id to the end of the `<body>` line.
    let middle: [UInt8]
    /// From `<main>` to the end.
    let main: [UInt8]
    /// The page's title (for the ContentTypeChanged notification).
    package let title: String
    /// The ContentTypeChanged notification's payload for a view of this page (type, url, path,
    /// title), made once when the page is rendered: percent-encoding the path per view was a
    /// few percent of a cached page's cost.
    var contentTypeChanged: [String: JSONValue] = [:]

    var byteCount: Int { head.count + middle.count + main.count + title.utf8.count }

    /// The page for one request: the cached bytes around the session id and the chrome.
    package func html(sessionID: String, chrome: String) -> Data {
        Data(buffer(sessionID: sessionID, chrome: chrome).readableBytesView)
    }

    /// `html` as the buffer a server sends: the page is copied once, into the buffer, with no
    /// Data to copy it from again.
    package func buffer(sessionID: String, chrome: String) -> ByteBuffer {
        let session = HubPageTemplates.escape(sessionID)
        var buffer = ByteBufferAllocator().buffer(capacity: head.count + middle.count + main.count + session.utf8.count + chrome.utf8.count)
        buffer.writeBytes(head)
        buffer.writeString(session)
        buffer.writeBytes(middle)
        buffer.writeString(chrome)
        buffer.writeBytes(main)
        return buffer
    }
}

/// The web hub's rendered pages, in memory: pages of a verified bundle never change, so each is
/// rendered once per key (the bundle opened, the page, the tailoring for hub and channel pages,
/// embed; the color scheme is the hub's setting and so the same for every page of one cache) and
/// then served from here. A newly activated bundle has a new serial, so its pages never meet the
/// old ones; those age out. Bounded by bytes: beyond `byteLimit` the least recently used pages go.
/// Lookups hold the lock for a dictionary access only, never while rendering.
/// Sendable: the entries and their counters live in a Mutex; `byteLimit` is a `let`.
package final class HubPageCache: Sendable {
    /// What a tailored page (the hub, a channel) depends on besides the bundle: the hub presented
    /// and the tag counts that ordered its articles. Its hash is computed once per session.
    package struct Tailoring: Hashable, Sendable {
        package let hubID: String
        package let counts: [String: Int]
        private let hash: Int

        package init(hubID: String, counts: [String: Int]) {
            self.hubID = hubID
            self.counts = counts
            var hasher = Hasher()
            hasher.combine(hubID)
            hasher.combine(counts)
            hash = hasher.finalize()
        }

        package func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        package static func == (a: Tailoring, b: Tailoring) -> Bool {
            a.hash == b.hash && a.hubID == b.hubID && a.counts == b.counts
        }
    }

    package struct Key: Hashable, Sendable {
        package var bundle: Int
        package var location: HubPageLocation
        /// nil for article pages: they are the same for every reader.
        package var tailoring: Tailoring?
        package var embed: Bool
    }

    /// 64 MiB: thousands of pages (a page is a few KiB plus its article body).
    package static let defaultByteLimit = 64 << 20

    package let byteLimit: Int
    private struct State {
        var entries: [Key: (page: RenderedHubPage, lastUse: UInt64)] = [:]
        var uses: UInt64 = 0
        var bytes = 0
        var hitCount = 0
        var renderCount = 0
    }
    private let state = Mutex(State())

    package init(byteLimit: Int = HubPageCache.defaultByteLimit) {
        self.byteLimit = max(1, byteLimit)
    }

    /// The page for `key`: cached, or rendered by `render` (outside the lock; two requests missing
    /// the same page at once may both render it, with the same bytes) and kept. nil when `render`
    /// finds no such page (nothing is kept then).
    package func page(_ key: Key, render: () -> RenderedHubPage?) -> RenderedHubPage? {
        if let cached = cached(key) { return cached }
        guard let page = render() else { return nil }
        insert(page, for: key)
        return page
    }

    /// The cached page for `key`, nil when it was not rendered yet (or was evicted).
    package func cached(_ key: Key) -> RenderedHubPage? {
        state.withLock { state in
            state.uses &+= 1
            guard let index = state.entries.index(forKey: key) else { return nil }
            state.entries.values[index].lastUse = state.uses
            state.hitCount += 1
            return state.entries.values[index].page
        }
    }

    /// Pages served from memory and pages rendered, since the cache was made (for tests and tools).
    package var counts: (hits: Int, renders: Int, pages: Int, bytes: Int) {
        state.withLock { ($0.hitCount, $0.renderCount, $0.entries.count, $0.bytes) }
    }

    private func insert(_ page: RenderedHubPage, for key: Key) {
        state.withLock { state in
            state.uses &+= 1
            state.renderCount += 1
            if let old = state.entries.updateValue((page, state.uses), forKey: key) { state.bytes -= old.page.byteCount }
            state.bytes += page.byteCount
            guard state.bytes > byteLimit else { return }
            // Evict the least recently used down to 3/4 of the limit: one sort per many inserts,
            // so an insert costs O(1) amortized.
            var target = byteLimit / 4 * 3
            if page.byteCount > target { target = page.byteCount }
            for (oldKey, entry) in state.entries.sorted(by: { $0.value.lastUse < $1.value.lastUse }) where state.bytes > target {
                guard oldKey != key else { continue }
                state.entries.removeValue(forKey: oldKey)
                state.bytes -= entry.page.byteCount
            }
        }
    }
}
