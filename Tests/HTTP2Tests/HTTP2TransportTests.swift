@testable import Delivery
import Foundation
import HTTP2
import Synchronization
import Testing

/// The transport under test. Every test makes its transport here, so that one line decides which
/// implementation the contract is checked against.
func makeTransport(caFile: String, connections: Int, maxInFlight: Int, pingIntervalSeconds: Double = 10,
                   pingTimeoutSeconds: Double = 5) throws -> any HTTP2Transport {
    try NGHTTP2Transport(name: "test", settings: HTTP2ClientSettings(
        connections: connections, maxInFlight: maxInFlight, caFile: caFile, pingIntervalSeconds: pingIntervalSeconds,
        pingTimeoutSeconds: pingTimeoutSeconds))
}

/// The contract of an `HTTP2Transport` with a provider that behaves as APNs does, well and badly:
/// real TLS on loopback against `FakeProvider`. What a worker relies on: every request ends with
/// an answer or a transport error, in order; a request the server did not process is sent again or
/// failed as not sent (never ambiguous, never processed twice); a dead connection is noticed long
/// before the request timeout; the server's stream limit is used and never exceeded; a broken
/// provider is not hammered with connections; finished streams are not reset; idle connections are
/// kept alive; TLS sessions are resumed.
@Suite(.serialized) struct HTTP2TransportTests {
    static let payload = Array(#"{"aps":{"alert":"Hello"}}"#.utf8)
    static let common = HTTP2HeaderList(["apns-topic: com.example.app", "content-type: application/json"])

    /// Request `index`: its path ends with the index, and its `apns-id` (echoed back) names it.
    static func request(_ provider: FakeProvider, _ index: Int, path: String? = nil, body: [UInt8] = payload) -> HTTP2Request {
        HTTP2Request(url: provider.url(path ?? "/3/device/\(index)"), headers: ["apns-id: \(apnsID(index))"],
                     sharedHeaders: common, body: body)
    }

    static func apnsID(_ index: Int) -> String { "00000000-0000-0000-0000-\(String(format: "%012d", index))" }

    /// Sends `requests` from a thread of its own and waits at most `seconds` for the responses; when
    /// they are not all in by then, records the failure and returns nil (the test's closing of the
    /// transport ends the send).
    static func send(_ requests: [HTTP2Request], on transport: any HTTP2Transport, within seconds: Double = 12,
                     sourceLocation: SourceLocation = #_sourceLocation) -> [HTTP2Response]? {
        let outcome = Outcome()
        let thread = Thread {
            let responses = transport.send(requests)
            outcome.responses.withLock { $0 = responses }
            outcome.done.signal()
        }
        thread.start()
        if outcome.done.wait(timeout: .now() + seconds) == .success { return outcome.responses.withLock { $0 } }
        Issue.record("the transport did not return \(requests.count) responses within \(seconds) s", sourceLocation: sourceLocation)
        return nil
    }

    final class Outcome: Sendable {
        let responses = Mutex<[HTTP2Response]?>(nil)
        let done = DispatchSemaphore(value: 0)
    }

    /// Responses that are not a 200 answer to their own request (by `apns-id`), described.
    static func notAnswered(_ responses: [HTTP2Response], first: Int = 0) -> [String] {
        responses.enumerated().compactMap { offset, response in
            if response.status == 200, response.headers["apns-id"] == apnsID(first + offset) { return nil }
            return "#\(first + offset): \(response.status) \(response.headers["apns-id"] ?? "-") \(response.transportError ?? "")"
        }
    }

    @Test func manyRequestsUseTheWindowOfTwoConnections() throws {
        let provider = try FakeProvider(responseDelayMilliseconds: 20)
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 2, maxInFlight: 2_000)
        defer { transport.close() }
        let requests = (0..<5_000).map { Self.request(provider, $0) }
        guard let responses = Self.send(requests, on: transport) else { return }
        let wrong = Self.notAnswered(responses)
        #expect(wrong.isEmpty, "\(wrong.count) not answered in order: \(wrong.prefix(5))")
        #expect(provider.connectionsAccepted == 2)
        #expect(provider.mostStreamsOpen <= 2_000)
        // Used: far more than one batch of 100 at a time (20 ms answers).
        #expect(provider.mostStreamsOpen > 100, "at most \(provider.mostStreamsOpen) streams open at once")
    }

    @Test func valuesThatChangeEveryRequestStayOutOfTheHPACKTable() throws {
        let provider = try FakeProvider()
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 1_000)
        defer { transport.close() }
        // APNs-like: a path and an `apns-id` per device, never indexed; the shared lines indexed.
        guard let perDevice = Self.send((0..<300).map { Self.request(provider, $0) }, on: transport) else { return }
        #expect(Self.notAnswered(perDevice).isEmpty)
        #expect(provider.neverIndexed(":path") == 300)
        #expect(provider.neverIndexed("apns-id") == 300)
        #expect(provider.neverIndexed("apns-topic") == 0 && provider.neverIndexed("content-type") == 0)
        // FCM-like: one path for every request, indexed once it repeats (the first one follows a
        // path that did not).
        let shared = (0..<300).map {
            HTTP2Request(url: provider.url("/v1/projects/p/messages:send"), sharedHeaders: Self.common, body: Array("\($0)".utf8))
        }
        guard let responses = Self.send(shared, on: transport) else { return }
        #expect(responses.allSatisfy { $0.status == 200 })
        #expect(provider.neverIndexed(":path") == 301, "\(provider.neverIndexed(":path") - 300) of 300 repeated paths never indexed")
    }

    @Test func twoConnectionsAreServedByTwoOfTheServersLoops() throws {
        // The benchmarks' edge runs two loop threads: whatever the kernel's SO_REUSEPORT hash says,
        // a client's two connections are served by one each, so runs are measured alike.
        for _ in 0..<4 {
            let provider = try FakeProvider(responseDelayMilliseconds: 20, threads: 2)
            defer { provider.stop() }
            let transport = try makeTransport(caFile: provider.caFile, connections: 2, maxInFlight: 2_000)
            defer { transport.close() }
            guard let responses = Self.send((0..<3_000).map { Self.request(provider, $0) }, on: transport) else { return }
            #expect(Self.notAnswered(responses).isEmpty)
            #expect(provider.connectionsAccepted == 2)
            #expect(provider.loopsServing == 2)
        }
    }

    @Test func aWindowNarrowerThanTheAnnouncedStreamsIsSharedOverTheConnections() throws {
        // The server announces 1,000 streams per connection, as APNs does; a window of 200 over two
        // connections (FCM's count of 100 streams each) keeps both busy, not the first alone.
        let provider = try FakeProvider(responseDelayMilliseconds: 20)
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 2, maxInFlight: 200)
        defer { transport.close() }
        guard let responses = Self.send((0..<2_000).map { Self.request(provider, $0) }, on: transport) else { return }
        #expect(Self.notAnswered(responses).isEmpty)
        let perConnection = provider.requestsPerConnection
        #expect(perConnection.count == 2 && perConnection.allSatisfy { $0 >= 500 }, "requests per connection: \(perConnection)")
        #expect(provider.mostStreamsOpen <= 200)
    }

    @Test func finishedStreamsAreNotReset() throws {
        let provider = try FakeProvider()
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 1_000)
        defer { transport.close() }
        let requests = (0..<2_000).map { Self.request(provider, $0) }
        guard let responses = Self.send(requests, on: transport) else { return }
        #expect(Self.notAnswered(responses).isEmpty)
        // A reset goes out as its stream ends; give the last ones the time to arrive.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(provider.resetsReceived == 0, "\(provider.resetsReceived) RST_STREAM frames for 2,000 finished streams")
    }

    @Test func goAwayMidFlightRetriesWhatTheServerDidNotProcess() throws {
        // The 300th request to arrive gets GOAWAY: the 299 before it are answered, it and the hundreds
        // behind it on the wire are not processed.
        let provider = try FakeProvider(responseDelayMilliseconds: 20) { $0.number == 300 ? .goAway : .answer() }
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 1_000)
        defer { transport.close() }
        let requests = (0..<1_000).map { Self.request(provider, $0) }
        guard let responses = Self.send(requests, on: transport) else { return }
        let wrong = Self.notAnswered(responses)
        #expect(wrong.isEmpty, "\(wrong.count) not answered: \(wrong.prefix(5))")
        let ambiguous = responses.filter { $0.transportError != nil && $0.requestSent }.count
        #expect(ambiguous == 0, "\(ambiguous) requests the server said it did not process were failed as possibly sent")
        let twice = (0..<1_000).filter { provider.processed("/3/device/\($0)") > 1 }
        #expect(twice.isEmpty, "processed twice: \(twice.prefix(5))")
        // The GOAWAY happened: requests arrived that were not processed, and the connection ended.
        #expect(provider.requestsReceived > 1_000)
        #expect(provider.connectionsAccepted >= 2)
    }

    @Test func refusedStreamsAreRetriedOrFailedAsNotSent() throws {
        // Every fifth request is refused the first time it arrives.
        let provider = try FakeProvider(responseDelayMilliseconds: 20) { arrival in
            arrival.firstTime && arrival.index % 5 == 0 ? .refuse : .answer()
        }
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 500)
        defer { transport.close() }
        let requests = (0..<500).map { Self.request(provider, $0) }
        guard let responses = Self.send(requests, on: transport) else { return }
        #expect(provider.streamsRefused >= 100)
        for (index, response) in responses.enumerated() {
            let processed = provider.processed("/3/device/\(index)")
            if response.status == 200 {
                #expect(response.headers["apns-id"] == Self.apnsID(index) && processed == 1, "#\(index): processed \(processed) times")
            } else {
                #expect(response.status == 0 && !response.requestSent && processed == 0,
                        "#\(index): \(response.status) \(response.transportError ?? "") sent: \(response.requestSent), processed \(processed) times")
            }
        }
    }

    @Test func aServerThatStopsAnsweringIsNoticedByPing() throws {
        let provider = try FakeProvider { _ in .goSilent }
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 100, pingIntervalSeconds: 1, pingTimeoutSeconds: 1)
        defer { transport.close() }
        // The requests' own timeout is 30 s: only a PING timeout ends them within 12.
        let requests = (0..<20).map { Self.request(provider, $0) }
        guard let responses = Self.send(requests, on: transport, within: 12) else { return }
        #expect(provider.requestsReceived >= 1)
        for (index, response) in responses.enumerated() {
            // The server may have acted on them: the outcome is unknown, and the worker counts them ambiguous.
            #expect(response.status == 0 && response.requestSent, "#\(index): \(response.status) sent: \(response.requestSent)")
        }
        // The provider answers again: a new connection carries the next request.
        provider.setScript { _ in .answer() }
        guard let again = Self.send([Self.request(provider, 20)], on: transport) else { return }
        #expect(Self.notAnswered(again, first: 20).isEmpty)
        #expect(provider.connectionsAccepted == 2)
    }

    @Test func aRequestUnansweredWithinItsTimeoutFailsAsPossiblySent() throws {
        let provider = try FakeProvider { _ in .goSilent }
        defer { provider.stop() }
        // PINGs only after 10 s of silence: the requests' own 1 s timeout ends them first.
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 10)
        defer { transport.close() }
        var requests = (0..<3).map { Self.request(provider, $0) }
        for index in requests.indices { requests[index].timeoutMilliseconds = 1_000 }
        guard let responses = Self.send(requests, on: transport) else { return }
        #expect(provider.requestsReceived >= 1)
        for (index, response) in responses.enumerated() {
            #expect(response.status == 0 && response.requestSent && response.transportError == "no answer within the request timeout",
                    "#\(index): \(response.status) \(response.transportError ?? "") sent: \(response.requestSent)")
        }
    }

    @Test func aLargeAnswerArrivesWhole() throws {
        // Far beyond HTTP/2's initial 64 KiB window: the client must keep granting flow-control credit.
        let body = String((0..<300_000).map { Character(UnicodeScalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
        let provider = try FakeProvider { _ in .answer(status: 400, body: body) }
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 10)
        defer { transport.close() }
        guard let responses = Self.send([Self.request(provider, 0), Self.request(provider, 1)], on: transport) else { return }
        for (index, response) in responses.enumerated() {
            #expect(response.status == 400 && response.headers["apns-id"] == Self.apnsID(index), "#\(index): \(response.status)")
            #expect(response.body == Array(body.utf8), "#\(index): \(response.body.count) bytes")
        }
    }

    @Test func oneStreamUntilTheFirstAnswerThenAThousand() throws {
        let provider = try FakeProvider(responseDelayMilliseconds: 20, maxConcurrentStreams: 1_000, maxConcurrentStreamsUntilFirstAnswer: 1)
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 1_000)
        defer { transport.close() }
        let requests = (0..<1_000).map { Self.request(provider, $0) }
        guard let responses = Self.send(requests, on: transport) else { return }
        let wrong = Self.notAnswered(responses)
        #expect(wrong.isEmpty, "\(wrong.count) not answered: \(wrong.prefix(5))")
        // A stream beyond the limit announced at that moment is refused by the server's session.
        #expect(provider.streamsRefused == 0, "\(provider.streamsRefused) streams opened beyond the announced limit")
        #expect(provider.mostStreamsOpenOnAConnection > 1)
        #expect(provider.connectionsAccepted == 1)
    }

    @Test func aFailingTLSHandshakeFailsAsNotSentAndBacksOff() throws {
        let provider = try FakeProvider()
        defer { provider.stop() }
        let transport = try makeTransport(caFile: try provider.strangerCAFile(), connections: 2, maxInFlight: 100)
        defer { transport.close() }
        // 100 requests over about 2 s, as a worker keeps sending while a provider is unreachable.
        var responses: [HTTP2Response] = []
        for round in 0..<20 {
            guard let some = Self.send((0..<5).map { Self.request(provider, round * 5 + $0) }, on: transport) else { return }
            responses += some
            Thread.sleep(forTimeInterval: 0.1)
        }
        for (index, response) in responses.enumerated() {
            #expect(response.status == 0 && !response.requestSent, "#\(index): \(response.status) sent: \(response.requestSent)")
        }
        #expect(provider.requestsReceived == 0)
        // A connection attempt per back-off, not one per request.
        #expect(provider.connectionsAccepted <= 10, "\(provider.connectionsAccepted) connections for 100 requests")
    }

    @Test func payloadTooLargeIsAFinalFailure() throws {
        let provider = try FakeProvider { arrival in
            arrival.bodySize > 4_096 ? .answer(status: 413, body: #"{"reason":"PayloadTooLarge"}"#) : .answer()
        }
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 10)
        defer { transport.close() }
        let large = Array(#"{"aps":{"alert":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 5_000) + Array(#""}}"#.utf8)
        guard let responses = Self.send([Self.request(provider, 0, body: large), Self.request(provider, 1)], on: transport) else { return }
        #expect(responses[0].status == 413)
        #expect(String(decoding: responses[0].body, as: UTF8.self) == #"{"reason":"PayloadTooLarge"}"#)
        #expect(APNsProvider.verdict(responses[0]) == .failed("PayloadTooLarge", deadToken: false))
        #expect(APNsProvider.verdict(responses[1]) == .sent)
    }

    @Test func anIdleConnectionIsKeptAliveWithPing() throws {
        let provider = try FakeProvider()
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 10, pingIntervalSeconds: 1, pingTimeoutSeconds: 1)
        defer { transport.close() }
        guard let responses = Self.send([Self.request(provider, 0)], on: transport) else { return }
        #expect(Self.notAnswered(responses).isEmpty)
        Thread.sleep(forTimeInterval: 3)
        #expect(provider.pingsReceived >= 1)
        // Kept alive, not replaced.
        guard let again = Self.send([Self.request(provider, 1)], on: transport) else { return }
        #expect(Self.notAnswered(again, first: 1).isEmpty)
        #expect(provider.connectionsAccepted == 1)
    }

    @Test func theNextConnectionResumesTheTLSSession() throws {
        // The request to /goaway, the first time, makes the server end the connection with GOAWAY.
        let provider = try FakeProvider { arrival in arrival.firstTime && arrival.path == "/goaway" ? .goAway : .answer() }
        defer { provider.stop() }
        let transport = try makeTransport(caFile: provider.caFile, connections: 1, maxInFlight: 10)
        defer { transport.close() }
        guard let first = Self.send([Self.request(provider, 0)], on: transport) else { return }
        #expect(Self.notAnswered(first).isEmpty)
        // Its outcome is the GOAWAY test's business; here it only closes the first connection.
        guard Self.send([Self.request(provider, 1, path: "/goaway")], on: transport) != nil else { return }
        guard let last = Self.send([Self.request(provider, 2)], on: transport) else { return }
        #expect(Self.notAnswered(last, first: 2).isEmpty)
        #expect(provider.connectionsAccepted == 2)
        #expect(provider.sessionsResumed >= 1)
    }
}
