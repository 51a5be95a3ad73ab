#if canImport(Glibc)
import Glibc
#endif

/// Dates in tags and send dates: `yyyy-MM-dd HH:mm`, read as UTC (both SDKs format dates this way).
public enum TagDate {
    /// Unix seconds for `yyyy-MM-dd HH:mm` (or `yyyy-MM-dd`, or with `:ss`), nil when malformed.
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10 || bytes.count == 16 || bytes.count == 19 else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int32(byte - 48)
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10)
        else { return nil }
        var hour: Int32 = 0, minute: Int32 = 0, second: Int32 = 0
        if bytes.count >= 16 {
            guard bytes[10] == UInt8(ascii: " ") || bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
                let h = number(11..<13), let m = number(14..<16)
            else { return nil }
            hour = h
            minute = m
        }
        if bytes.count == 19 {
            guard bytes[16] == UInt8(ascii: ":"), let s = number(17..<19) else { return nil }
            second = s
        }
        guard (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        // timegm normalises 31 February into March: reject dates that moved.
        guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
        return Int64(seconds)
    }

    /// `yyyy-MM-dd HH:mm` in UTC.
    public static func format(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2)) "
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2))"
    }
}

/// Versions such as `1.2.3` encoded as one integer that sorts like the version: four parts of at
/// most four digits each (`major·10¹² + minor·10⁸ + patch·10⁴ + build`).
public enum TagVersion {
    public static func encode(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var value: Int64 = 0
        for index in 0..<4 {
            var part: Int64 = 0
            if index < parts.count {
                guard parts[index].count <= 4, let number = Int64(parts[index]), number >= 0 else { return nil }
                part = number
            }
            value = value * 10_000 + part
        }
        return value
    }
}
