import Foundation

/// A crowd of clients posting events to a serve (a child or in process), each on a thread of its
/// own, until `finish()` (or `perClient` events each): the acknowledged event ids and every failed
/// request (a status other than 201, or an error), for tests that change the serve under load and
/// then check that nothing was lost or stored twice.
/// Safe to share: `ids` and `failures` are read and written under `lock`; the rest is set in init.
final class EventCrowd: @unchecked Sendable {
    private let lock = NSLock()
    private var acknowledged: [String] = []
    private var failed: [String] = []
    private let stop = DispatchSemaphore(value: 0)
    private let clients = DispatchGroup()

    /// Starts `count` clients, each posting at most `perClient` events named `C<client>-<n>`.
    init(serve: any JSONCalls, count: Int = 8, perClient: Int) {
        for client in 0..<count {
            clients.enter()
            Thread { [self] in
                defer { clients.leave() }
                for n in 0..<perClient where stop.wait(timeout: .now()) == .timedOut {
                    do {
                        let (status, body) = try serve.call("POST", "/v1/events", #"{"type":"named_event","name":"C\#(client)-\#(n)"}"#)
                        let id = ((body as? [[String: Any]])?.last?["id"] as? String) ?? ""
                        lock.withLock { if status == 201 { acknowledged.append(id) } else { failed.append("\(status)") } }
                    } catch {
                        lock.withLock { failed.append("\(error)") }
                    }
                }
                stop.signal()  // let the next client see it too
            }.start()
        }
    }

    /// Stops the clients and waits for them (at most `timeout` seconds); false when one is still posting.
    func finish(timeout: Double = 120) -> Bool {
        stop.signal()
        return clients.wait(timeout: .now() + timeout) == .success
    }

    /// The ids of the acknowledged events, and the failed requests.
    var ids: [String] { lock.withLock { acknowledged } }
    var failures: [String] { lock.withLock { failed } }
}
