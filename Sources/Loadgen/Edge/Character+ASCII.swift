extension Character {
    /// 0-9 only (`isNumber` also takes other scripts' digits and fractions).
    var isASCIIDigit: Bool { isASCII && isNumber }
}
