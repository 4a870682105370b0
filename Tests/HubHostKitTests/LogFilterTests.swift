import Logging
import XCTest

@testable import HubHostKit

final class LogFilterTests: XCTestCase {
    func testDefaultsAreErrorAndDebug() {
        let filter = LogFilter()
        XCTAssertEqual(filter.severity, .error)
        XCTAssertEqual(filter.verbosity, .debug)
    }

    /// The whole matrix: every severity setting x every verbosity setting x every record level,
    /// against the seed's rule written out independently (positions in the ordered lists).
    func testFilterMatrix() {
        let severityOrder: [LogSeverity] = [.none, .criticalError, .error, .warning, .info]
        let verbosityOrder: [LogVerbosity] = [.none, .debug, .info]
        var passed = 0
        for settingSeverity in severityOrder {
            for settingVerbosity in verbosityOrder {
                let filter = LogFilter(severity: settingSeverity, verbosity: settingVerbosity)
                for recordSeverity in severityOrder.dropFirst() {
                    for recordVerbosity in verbosityOrder.dropFirst() {
                        let off = settingSeverity == .none || settingVerbosity == .none
                        let expected =
                            !off
                            && severityOrder.firstIndex(of: recordSeverity)! <= severityOrder.firstIndex(of: settingSeverity)!
                            && verbosityOrder.firstIndex(of: recordVerbosity)! <= verbosityOrder.firstIndex(of: settingVerbosity)!
                        XCTAssertEqual(
                            filter.allows(severity: recordSeverity, verbosity: recordVerbosity), expected,
                            "setting \(settingSeverity)/\(settingVerbosity), record \(recordSeverity)/\(recordVerbosity)")
                        if expected { passed += 1 }
                    }
                }
            }
        }
        // 4 non-None severity settings x 2 non-None verbosity settings, counted by hand:
        // severities allowed 1+2+3+4 = 10, verbosities allowed 1+2 = 3, so 30 combinations pass.
        XCTAssertEqual(passed, 30)
    }

    func testNoneTurnsLoggingOffAndRecordsOfNoneNeverPass() {
        XCTAssertFalse(LogFilter(severity: .none, verbosity: .info).allows(severity: .criticalError, verbosity: .debug))
        XCTAssertFalse(LogFilter(severity: .info, verbosity: .none).allows(severity: .criticalError, verbosity: .debug))
        XCTAssertFalse(LogFilter(severity: .info, verbosity: .info).allows(severity: .none, verbosity: .debug))
    }

    func testPipelineFiltersBeforeAnyDestination() {
        let pipeline = LogPipeline(filter: LogFilter(severity: .warning, verbosity: .debug))
        let capture = CapturedLog()
        pipeline.attach([capture])
        pipeline.log(.error, .debug, source: "t", "kept error")
        pipeline.log(.warning, .debug, source: "t", "kept warning")
        pipeline.log(.info, .debug, source: "t", "dropped info")
        pipeline.log(.error, .info, source: "t", "dropped detail")
        XCTAssertEqual(capture.messages, ["kept error", "kept warning"])
    }

    func testRecordsBeforeAttachAreReplayed() {
        let pipeline = LogPipeline(filter: LogFilter(severity: .info, verbosity: .debug))
        pipeline.log(.error, .debug, source: "loader", "early")
        let capture = CapturedLog()
        pipeline.attach([capture])
        pipeline.log(.info, .debug, source: "loader", "late")
        XCTAssertEqual(capture.messages, ["early", "late"])
    }

    func testSwiftLogFeedsThePipeline() {
        let pipeline = LogPipeline(filter: LogFilter(severity: .info, verbosity: .debug))
        let capture = CapturedLog()
        pipeline.attach([capture])
        let logger = Logger(label: "hubhost.test", pipeline: pipeline)
        logger.critical("c")
        logger.error("e", metadata: ["plugin": "geo"])
        logger.warning("w")
        logger.info("i")
        logger.debug("d: too detailed for verbosity debug")
        XCTAssertEqual(capture.messages, ["c", "e plugin=geo", "w", "i"])
        XCTAssertEqual(capture.records.map(\.severity), [.criticalError, .error, .warning, .info])
        XCTAssertEqual(Set(capture.records.map(\.source)), ["hubhost.test"])
    }
}
