@testable import Loadgen
import Testing

/// `--threshold`: what an expression means, how it is judged on a run, and what a wrong one says.
struct ThresholdTests {
    func parse(_ text: String) throws -> Threshold { try Threshold(parsing: text) }

    @Test func expressionsName_aMethodAFigureAndABound() throws {
        let p99 = try parse("registerDevice.p99<50ms")
        #expect(p99.method == .registerDevice && p99.figure == .percentile(99) && p99.comparison == .less && p99.bound == 50_000)
        let errors = try parse("errors < 0.1%")
        #expect(errors.method == nil && errors.figure == .errors && errors.bound == 0.001)
        #expect(try parse("errors<0.001").bound == 0.001)
        let deep = try parse("p99.9<=2s")
        #expect(deep.method == nil && deep.figure == .percentile(99.9) && deep.comparison == .lessOrEqual && deep.bound == 2_000_000)
        let helper = try parse("onesignal/adddevice.max<800us")
        #expect(helper.method == .oneSignalAddDevice && helper.figure == .max && helper.bound == 800)
        #expect(try parse("total.mean<3").bound == 3_000)  // milliseconds by default
        let rate = try parse("rate>=4900")
        #expect(rate.figure == .rate && rate.comparison == .greaterOrEqual && rate.bound == 4900)
        #expect(try parse("postEvent.errors>0%").comparison == .greater)
    }

    @Test func wrongExpressionsSayWhatIsWrong() {
        let cases: [(String, String)] = [
            ("registerDevice.p99", "needs a comparison"),
            ("sendPush.p99<5ms", "no method sendPush"),
            ("p0<5ms", "no figure p0"),
            ("p101<5ms", "no figure p101"),
            ("latency<5ms", "no figure latency"),
            ("p99<5min", "latency is in us, ms or s"),
            ("p99<-1ms", "is not a number"),
            ("postEvent.rate>5", "rate is of all requests"),
        ]
        for (text, message) in cases {
            do {
                _ = try Threshold(parsing: text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.description.contains(message), "\(text): \(error)")
            }
        }
    }

    @Test func verdictsOnARun() throws {
        let result = ReportTests().result()  // registerDevice p99 9.919 ms; 20 of 1,000 requests failed; 100 req/s
        let verdicts = Threshold.evaluate(try ["registerDevice.p99<50ms", "registerDevice.p99<5ms", "errors<0.1%", "errors<=2%",
                                               "rate>=100", "getTags.p99<1s"].map(parse), on: result)
        #expect(verdicts.map(\.passed) == [true, false, false, true, true, false])
        #expect(verdicts[0].value == 9_919 && verdicts[2].value == 0.02 && verdicts[5].value == nil)
        let table = Threshold.table(verdicts)
        #expect(table.contains("registerDevice.p99<5ms     9.92 ms  FAILED"), "\(table)")
        #expect(table.contains("errors<0.1%                2.000 %  FAILED"), "\(table)")
        #expect(table.contains("getTags.p99<1s             no data  FAILED"), "\(table)")
        #expect(table.split(separator: "\n").first == "thresholds:")
        // The JSON carries each verdict.
        let json = result.json(thresholds: verdicts)
        let written = try #require(json["thresholds"]?.arrayValue)
        #expect(written.count == 6)
        #expect(written[1]["passed"] == false && written[1]["threshold"] == "registerDevice.p99<5ms")
    }
}
