import SDKClient

/// The flags `fleet` and `campaign` share: where Herald is, how its TLS is checked, and how the run
/// reports (`--allow-errors`, `-q`).
struct TargetFlags {
    var target: TargetURL?
    var caFile: String?
    var insecure = false
    var allowErrors = false
    var progress = true

    /// Reads the cursor's current option when it is one of these; false when it is not.
    mutating func read(_ cursor: inout ArgumentCursor) throws(FleetOptions.Problem) -> Bool {
        let name = cursor.name
        switch name {
        case "--target":
            let text = try cursor.value()
            do { target = try TargetURL(parsing: text) } catch { throw FleetOptions.Problem("--target \(error.description)") }
        case "--ca":
            caFile = try FleetOptions.path(name, try cursor.value())
        case "--insecure", "-k":
            try cursor.flag()
            insecure = true
        case "--allow-errors":
            try cursor.flag()
            allowErrors = true
        case "--no-progress", "--quiet", "-q":
            try cursor.flag()
            progress = false
        default:
            return false
        }
        return true
    }

    /// The target, once the flags agree with each other.
    func checked() throws(FleetOptions.Problem) -> TargetURL {
        guard let target else { throw FleetOptions.Problem("--target URL is required (for example --target http://127.0.0.1:8080)") }
        if caFile != nil && !target.isTLS { throw FleetOptions.Problem("--ca needs an https:// target") }
        if caFile != nil && insecure { throw FleetOptions.Problem("--ca and --insecure contradict each other") }
        return target
    }
}
