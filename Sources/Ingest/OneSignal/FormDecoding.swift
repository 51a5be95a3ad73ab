import Core

/// `application/x-www-form-urlencoded` bodies, as the OneSignal helper posts them.
enum FormDecoding {
    /// Decodes `a=1&b=x%20y` into fields; later duplicates win. Nil when a percent escape is broken.
    static func decode(_ body: [UInt8]) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(parts[0]) else { return nil }
            let value = parts.count > 1 ? percentDecode(parts[1]) : ""
            guard let value else { return nil }
            fields[name] = value
        }
        return fields
    }

    static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                    let high = bytes[index + 1].hexDigitValue, let low = bytes[index + 2].hexDigitValue
                else { return nil }
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }
}
