import XCTest

@testable import HubHostKit

/// purchase_successful's typed properties: built from the Swift API, JSON and the CLI; refused with
/// a clear reason when wrong, before anything is stored; usable in campaign triggers.
final class PurchaseTests: XCTestCase {
    func testTheSwiftAPIBuildsTypedAttributes() throws {
        let event = try Event.purchaseSuccessful(Purchase(amount: 50, currencyCode: "USD", itemList: ["box", "hammer"]))
        XCTAssertEqual(event.type, .purchaseSuccessful)
        XCTAssertEqual(event[attribute: "purchaseAmount"], .int(50))
        XCTAssertEqual(event[attribute: "numberOfItems"], .int(2), "defaults to the item list's length")
        XCTAssertEqual(event[attribute: "currencyCode"], .string("USD"))
        XCTAssertEqual(event[attribute: "itemList"], .string("box,hammer"))
        XCTAssertThrowsError(try Event.purchaseSuccessful(Purchase(amount: 5, currencyCode: "usd"))) {
            XCTAssertTrue("\($0)".contains("ISO 4217"), "\($0)")
        }
        XCTAssertThrowsError(try Event.purchaseSuccessful(Purchase(amount: -1, currencyCode: "USD"))) {
            XCTAssertTrue("\($0)".contains("negative"), "\($0)")
        }
        XCTAssertThrowsError(try Event.purchaseSuccessful(Purchase(amount: 1, currencyCode: "USD", itemList: ["a,b"]))) {
            XCTAssertTrue("\($0)".contains("','"), "\($0)")
        }
    }

    func testJSONInputAndItsErrors() throws {
        let events = try EventInput.parse(
            Data(
                #"{"type": "purchase_successful", "purchase": {"amount": 50, "currency_code": "EUR", "item_list": ["box"], "number_of_items": 3}}"#
                    .utf8))
        XCTAssertEqual(events.first?[attribute: "numberOfItems"], .int(3))
        XCTAssertEqual(events.first?[attribute: "currencyCode"], .string("EUR"))
        for (json, expected) in [
            (#"{"type": "custom", "name": "x", "purchase": {"amount": 1, "currency_code": "USD"}}"#, "belongs to a purchase_successful event"),
            (#"{"type": "purchase_successful", "purchase": {"amount": 1.5, "currency_code": "USD"}}"#, "'amount' must be an integer"),
            (#"{"type": "purchase_successful", "purchase": {"amount": 1}}"#, "'currency_code' is required"),
            (#"{"type": "purchase_successful", "purchase": {"amount": 1, "currency_code": "USD", "items": []}}"#, "unknown purchase key 'items'"),
            (#"{"type": "purchase_successful", "attributes": {"purchaseAmount": "fifty"}}"#, "'purchaseAmount' must be an integer")
        ] {
            XCTAssertThrowsError(try EventInput.parse(Data(json.utf8)), json) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(json): \(error)")
            }
        }
    }

    func testAWrongPurchaseIsRefusedBeforeAnythingIsStoredAndARightOneTriggersACampaign() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let campaigns: [String: Any] = [
            "data": [
                [
                    "campaignData": [
                        "campaignId": "big-spender", "maxImpressions": 1, "type": 1, "isTest": false, "messagePayload": ["title": "Thanks"],
                        "triggers": [
                            [
                                "type": 1, "eventType": 3, "eventName": "purchase_successful",
                                "attributes": [
                                    ["name": "purchaseAmount", "value": "40", "type": 2, "operator": 3],
                                    ["name": "currencyCode", "value": "USD", "type": 1, "operator": 1]
                                ]
                            ]
                        ]
                    ]
                ]
            ]
        ]
        try JSONSerialization.data(withJSONObject: campaigns).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
        let host = try TestSupport.campaignsHost(in: folder)
        defer { host.shutdown() }
        let engine = try host.events()
        let campaignEngine = try XCTUnwrap(try host.campaigns())
        let wrong = Event(type: .purchaseSuccessful, attributes: [.init("purchaseAmount", .string("lots"))])
        XCTAssertThrowsError(try engine.track(wrong))
        XCTAssertThrowsError(try engine.trackBatch([Event(type: .appStart), wrong]), "all or nothing")
        XCTAssertEqual(try engine.store.list().count, 0, "nothing stored")

        _ = try engine.track(try Event.purchaseSuccessful(Purchase(amount: 30, currencyCode: "USD")))
        XCTAssertNil(campaignEngine.next(allowedContexts: []), "30 is not greater than 40")
        _ = try engine.track(try Event.purchaseSuccessful(Purchase(amount: 50, currencyCode: "USD", itemList: ["box"])))
        XCTAssertEqual(campaignEngine.next(allowedContexts: [])?.id, "big-spender")
    }

    func testTheCLI() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("data_dir: data\n", to: folder + "/plugins.yaml")
        let tracked = try TestSupport.hubhost([
            "track", "purchase_successful", "--purchase-amount", "50", "--currency-code", "USD",
            "--item", "box", "--item", "hammer", "--json", "--manifest", folder + "/plugins.yaml"
        ])
        XCTAssertEqual(tracked.status, 0, tracked.stderr)
        let stored = try tracked.json(as: [String: Any].self)
        let attributes = try XCTUnwrap(stored["attributes"] as? [String: Any])
        XCTAssertEqual(attributes["purchaseAmount"] as? Int, 50)
        XCTAssertEqual(attributes["itemList"] as? String, "box,hammer")
        XCTAssertEqual(attributes["numberOfItems"] as? Int, 2)
        let refused = try TestSupport.hubhost([
            "track", "purchase_successful", "--purchase-amount", "5", "--currency-code", "dollars",
            "--manifest", folder + "/plugins.yaml"
        ])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("ISO 4217"), refused.stderr)
        let misplaced = try TestSupport.hubhost(["track", "custom", "x", "--item", "box", "--manifest", folder + "/plugins.yaml"])
        XCTAssertNotEqual(misplaced.status, 0)
        XCTAssertTrue(misplaced.stderr.contains("are for purchase_successful events"), misplaced.stderr)
    }
}
