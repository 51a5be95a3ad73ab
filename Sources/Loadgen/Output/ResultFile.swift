import Core
import Foundation
import SDKClient

/// Reads back what `herald-load fleet --json` (or `merge --json`) wrote, for `compare` and `merge`:
/// the settings, every method's counts and exact latency histogram, and the per-second series.
/// Anything else is refused with a message naming the file.
enum ResultFile {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ path: String) throws(Problem) -> FleetResult {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw Problem(description: "cannot read \(path): \(error.localizedDescription)")
        }
        let json: JSON
        do { json = try JSON.parse(data) } catch {
            throw Problem(description: "\(path) is not a herald-load result: not JSON (\(error))")
        }
        return try parse(json, name: path)
    }

    /// The result `json` holds; `name` says which file in messages.
    static func parse(_ json: JSON, name: String) throws(Problem) -> FleetResult {
        func refuse(_ why: String) -> Problem { Problem(description: "\(name) is not a herald-load fleet result: \(why)") }
        guard json.objectValue != nil, json["herald_load_version"]?.stringValue != nil, let requests = json["requests"]?.objectValue,
              json["total"]?.objectValue != nil else {
            throw refuse("no herald_load_version, requests and total (write one with herald-load fleet --json)")
        }
        guard let series = json["series"]?.objectValue else {
            throw refuse("no per-second series (written by a herald-load older than compare and merge: run it again)")
        }
        func int(_ key: String, in object: JSON = json) throws(Problem) -> Int {
            guard let value = object[key]?.lenientInt, value >= 0 else { throw refuse("\(key) is not a count") }
            return Int(value)
        }
        func number(_ key: String, in object: JSON = json) throws(Problem) -> Double {
            guard let value = object[key]?.lenientDouble, value.isFinite, value >= 0 else { throw refuse("\(key) is not a number ≥ 0") }
            return value
        }

        let target: TargetURL
        do { target = try TargetURL(parsing: json["target"]?.stringValue ?? "") } catch { throw refuse("target: \(error)") }
        guard let app = json["app"]?.stringValue else { throw refuse("no app") }
        var options = FleetOptions(target: target, app: app, devices: try int("devices"), durationSeconds: try number("duration_s"))
        options.connections = try int("connections")
        options.threads = try int("threads")
        guard let seed = json["seed"]?.lenientInt else { throw refuse("no seed") }
        options.seed = UInt64(bitPattern: seed)
        options.scenario.oneSignalShare = json["onesignal_fraction"]?.lenientDouble ?? 0
        options.scenario.huaweiShare = json["huawei_fraction"]?.lenientDouble ?? 0
        options.scenario.webShare = json["web_fraction"]?.lenientDouble ?? 0
        options.scenarioPath = json["scenario"]?.stringValue
        options.rate = json["target_rate"]?.lenientDouble
        if let stages = json["stages"]?.arrayValue {
            var list: [RateStages.Stage] = []
            for stage in stages {
                list.append(RateStages.Stage(seconds: try number("duration_s", in: stage), target: try number("target_rate", in: stage)))
            }
            options.stages = RateStages(stages: list)
        }
        if let segment = json["segment"], !segment.isNull {
            let index = try int("index", in: segment), count = try int("count", in: segment), fleet = try int("fleet_devices", in: segment)
            guard index >= 1, index <= count, count <= fleet else { throw refuse("segment \(index)/\(count) of \(fleet) devices") }
            options.segment = Segment(index: index, count: count, fleetDevices: fleet)
        }

        var stats = FleetStats()
        for (methodName, entry) in requests {
            guard let method = FleetMethod.allCases.first(where: { $0.name == methodName }) else { throw refuse("unknown method \(methodName)") }
            var methodStats = MethodStats()
            methodStats.ok = try int("ok", in: entry)
            for (kindName, count) in entry["errors"]?.objectValue ?? [:] {
                guard let kind = ErrorKind(description: kindName), let count = count.lenientInt, count >= 0 else {
                    throw refuse("\(methodName): error \(kindName)")
                }
                methodStats.errors[kind] = Int(count)
            }
            guard let histogram = entry["histogram"], let buckets = SparseBuckets.decode(histogram["buckets"]),
                  let minimum = histogram["min_us"]?.lenientInt, let maximum = histogram["max_us"]?.lenientInt,
                  let sum = histogram["sum_us"]?.lenientDouble,
                  let latency = LatencyHistogram(buckets: buckets, min: minimum, max: maximum, sum: sum) else {
                throw refuse("\(methodName) has no latency histogram")
            }
            methodStats.latency = latency
            stats.methods[method.rawValue] = methodStats
        }
        for (eventName, count) in json["events"]?.objectValue ?? [:] {
            guard let index = FleetStats.eventNames.firstIndex(of: eventName), let count = count.lenientInt else { throw refuse("event \(eventName)") }
            stats.events[index] = Int(count)
        }
        for (kindName, text) in json["error_details"]?.objectValue ?? [:] {
            if let kind = ErrorKind(description: kindName), let text = text.stringValue { stats.details[kind] = text }
        }
        stats.registered = try int("registered")
        stats.optedOut = try int("opted_out")
        stats.unsubscribed = try int("unsubscribed")
        stats.dropped = try int("dropped")
        stats.bytesSent = try int("bytes_sent")
        stats.bytesReceived = try int("bytes_received")

        guard let ends = series["end_s"]?.arrayValue?.compactMap(\.lenientDouble) else { throw refuse("series without end_s") }
        var seconds = [[SecondSample.Method]](repeating: [SecondSample.Method](repeating: SecondSample.Method(), count: FleetMethod.allCases.count),
                                              count: ends.count)
        for (methodName, entry) in series["methods"]?.objectValue ?? [:] {
            guard let method = FleetMethod.allCases.first(where: { $0.name == methodName }),
                  let ok = entry["ok"]?.arrayValue?.compactMap(\.lenientInt), let errors = entry["errors"]?.arrayValue?.compactMap(\.lenientInt),
                  let latency = entry["latency"]?.arrayValue, ok.count == ends.count, errors.count == ends.count, latency.count == ends.count else {
                throw refuse("series of \(methodName) does not match end_s")
            }
            for index in ends.indices {
                guard let buckets = SparseBuckets.decode(latency[index]), let histogram = SecondHistogram(buckets: buckets) else {
                    throw refuse("series of \(methodName): latency of second \(index + 1)")
                }
                seconds[index][method.rawValue] = SecondSample.Method(ok: Int(ok[index]), failed: Int(errors[index]), latency: histogram)
            }
        }
        var errors = [[ErrorKind: Int]](repeating: [:], count: ends.count)
        for (kindName, counts) in series["errors"]?.objectValue ?? [:] {
            guard let kind = ErrorKind(description: kindName), let counts = counts.arrayValue?.compactMap(\.lenientInt), counts.count == ends.count else {
                throw refuse("series of errors \(kindName) does not match end_s")
            }
            for index in ends.indices where counts[index] > 0 { errors[index][kind] = Int(counts[index]) }
        }
        let timeline = ends.indices.map { index in
            SecondSample(elapsed: ends[index], span: ends[index] - (index > 0 ? ends[index - 1] : 0), methods: seconds[index], errors: errors[index])
        }
        var result = FleetResult(options: options, stats: stats, timeline: timeline, seconds: options.durationSeconds,
                                 interrupted: json["interrupted"] == .bool(true))
        result.heraldLoadVersion = json["herald_load_version"]?.stringValue ?? ""
        result.heraldVersion = json["herald_version"]?.stringValue
        result.startedAt = json["started_at"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) }
        result.mergedSegments = json["merged_segments"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return result
    }
}
