import Logging
import XCTest

@testable import HubHostKit

/// Libraries log with swift-log's process-wide LoggingSystem; once routed, their records go
/// through the host's filter and destinations like hubhost's own.
final class ProcessLoggingTests: XCTestCase {
    func testLibraryRecordsGoThroughTheHostPipelineAndItsFilter() {
        var filter = LogFilter()
        filter.severity = .warning
        let pipeline = LogPipeline(filter: filter)
        let capture = LogCapture()
        pipeline.attach([capture])
        ProcessLogging.route(to: pipeline)
        let library = Logger(label: "some.library")  // made the way Hummingbird or NIO make theirs
        library.error("library failure")
        library.debug("library chatter")
        pipeline.flush()
        XCTAssertTrue(capture.messages.contains { $0.contains("library failure") }, "\(capture.messages)")
        XCTAssertFalse(capture.messages.contains { $0.contains("library chatter") }, "the host's severity filter applies")
    }
}
