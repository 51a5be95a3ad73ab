import Core
import StoreCore

/// The first row of a new device's opt-in history (`permission_changes`, the push primer's
/// analytics) is written by the code that inserts the device, a batch's devices with one INSERT;
/// each later change of its permission state is written by the trigger `permission_changed`. A
/// trigger on insert would run a sub-program per device (a frame, its registers, a count of the
/// rows already there), which costs SQLite more than the row itself (docs/benchmarks.md).
///
/// A new device's first row takes `seq` 0: no row names its id yet. Device rows are never deleted
/// (deleteDevice anonymizes them) and Herald never chooses a device's row id, so SQLite gives each
/// new device the largest id so far plus one.
extension SQLiteDeviceStore {
    /// A device just inserted, as its first history row records it.
    struct NewDevice {
        let appID: Int64
        let id: Int64
        let at: Int64
        let appVersion: String?
        /// Whether it came opted in: with a push token, subscribed (as every new device is), and
        /// notifications not turned off (`notificationTypes` 0; absent counts as allowed).
        let optedIn: Bool

        init(appID: Int64, id: Int64, at: Int64, attributes: DeviceAttributes, hasToken: Bool) {
            (self.appID, self.id, self.at, appVersion) = (appID, id, at, attributes.appVersion)
            optedIn = hasToken && attributes.notificationTypes != 0
        }
    }

    /// Writes the first history row of each of `devices`, in pieces of `deferredRows` at most.
    static func recordNew(_ devices: [NewDevice], _ connection: SQLiteConnection) throws {
        try inPieces(devices) { piece in
            try connection.prepare(newDeviceRows[shape(piece.count)]).run { parameters in
                for device in piece {
                    parameters.append(.integer(device.appID))
                    parameters.append(.integer(device.at))
                    parameters.append(.integer(device.id))
                    parameters.append(.optional(device.appVersion))
                    parameters.append(.integer(device.optedIn ? 1 : 0))
                }
            }
        }
    }

    /// For each shape: new devices' first history rows (registered, `seq` 0).
    private static let newDeviceRows: [String] = (0...deferredRows.trailingZeroBitCount).map { shape in
        """
        INSERT INTO permission_changes (app_id, at, device_id, seq, app_version, opted_in, registered)
        VALUES \(valueGroups(rows: 1 << shape, parameters: 5, "($1, $2, $3, 0, $4, $5, 1)"))
        """
    }
}
