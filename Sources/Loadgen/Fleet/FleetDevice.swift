/// One simulated app install, derived entirely from the run's seed and the device's index: nothing
/// of it is stored, so a million devices cost only their progress counters (`DeviceProgress`).
struct FleetDevice {
    let index: Int
    /// The root hash every attribute of this device comes from.
    let hash: UInt64
    let isIOS: Bool
    /// A browser with the Pushwoosh Web SDK (`device_type` 11 Chrome or 12 Firefox): its push token is
    /// a subscription endpoint on the edge's Web Push port, with keys derived from `hash`.
    let isWeb: Bool
    let isFirefox: Bool
    /// An Android install on a Huawei phone without Google services: `device_type` 17, a Push Kit token.
    let isHuawei: Bool
    /// Talks through the OneSignal helper's routes (an iOS app with the helper) instead of the SDK.
    let usesOneSignal: Bool
    let language: Int
    let timezone: Int64
    let model: Int
    let osVersion: Int
    let appVersion: Int
    /// iOS development build (APNs sandbox).
    let sandbox: Bool
    /// The app set its own user id (else iOS sends the hwid, Android none).
    let hasUserID: Bool
    /// iOS notification permission bitmask (1 badge, 2 sound, 4 alert).
    let notificationTypes: Int

    /// The device `index` of a fleet: its platform by the scenario's shares. Each share draws from
    /// its own hash, so a share changes only the devices it picks (a browser share takes devices
    /// from every platform; the others keep theirs).
    init(seed: UInt64, index: Int, scenario: Scenario) {
        self.index = index
        hash = Mix.hash(seed, UInt64(index))
        usesOneSignal = scenario.oneSignalShare > 0 && Mix.unit(Mix.hash(hash, 2)) < scenario.oneSignalShare
        isWeb = !usesOneSignal && scenario.webShare > 0 && Mix.unit(Mix.hash(hash, 41)) < scenario.webShare
        isFirefox = isWeb && Mix.unit(Mix.hash(hash, 42)) < scenario.firefoxShare
        isIOS = !isWeb && (usesOneSignal || Mix.unit(Mix.hash(hash, 1)) < scenario.iosShare)
        isHuawei = !isIOS && !isWeb && scenario.huaweiShare > 0 && Mix.unit(Mix.hash(hash, 40)) < scenario.huaweiShare
        language = DeviceCatalog.languages.pick(Mix.hash(hash, 3))
        timezone = DeviceCatalog.timezones[DeviceCatalog.timezones.pick(Mix.hash(hash, 4))]
        if isWeb {
            model = (isFirefox ? DeviceCatalog.firefoxVersions : DeviceCatalog.chromeVersions).pick(Mix.hash(hash, 5))
            osVersion = DeviceCatalog.desktopSystems.pick(Mix.hash(hash, 6))
        } else {
            model = (isIOS ? DeviceCatalog.iosModels : DeviceCatalog.androidModels).pick(Mix.hash(hash, 5))
            osVersion = (isIOS ? DeviceCatalog.iosVersions : DeviceCatalog.androidVersions).pick(Mix.hash(hash, 6))
        }
        appVersion = DeviceCatalog.appVersions.pick(Mix.hash(hash, 7))
        let flags = Mix.hash(hash, 8)
        sandbox = isIOS && flags % 100 < 5
        hasUserID = (flags >> 8) % 100 < 25
        let permission = (flags >> 16) % 100
        notificationTypes = permission < 95 - Scenario.percent(scenario.optOut) ? 7 : (permission < 95 ? 0 : 6)
    }

    /// An iOS SDK install whose user denied notifications (`notificationTypes` 0): Herald keeps it
    /// registered but sends it only silent pushes.
    var optedOut: Bool { isIOS && !usesOneSignal && notificationTypes == 0 }

    /// Pushwoosh `device_type`: 1 iOS, 3 Android, 17 Huawei, 11 Chrome, 12 Firefox.
    var platform: Int { isWeb ? (isFirefox ? 12 : 11) : isIOS ? 1 : (isHuawei ? 17 : 3) }

    var hwidHigh: UInt64 { Mix.hash(hash, 10) }
    var hwidLow: UInt64 { Mix.hash(hash, 11) }

    /// iOS: the IDFV, an upper-case UUID; Android and browsers: a random lower-case UUID.
    func writeHWID(_ out: inout ByteWriter) {
        out.uuid(hwidHigh, hwidLow, uppercase: isIOS)
    }

    /// iOS: 32 bytes of APNs token as 64 lower-case hex digits. Android: an FCM registration token
    /// (`<22 chars>:APA91b<134 chars>`, URL-safe base64). Huawei: a Push Kit token (`IQAAAACy` and
    /// 122 URL-safe base64 characters).
    func writeToken(_ out: inout ByteWriter) {
        if isIOS {
            for part in 0..<4 { out.hex(Mix.hash(hash, 20 + UInt64(part)), digits: 16) }
        } else if isHuawei {
            out.append("IQAAAACy")
            out.base64URL(Mix.hash(hash, 21), count: 122)
        } else {
            out.base64URL(Mix.hash(hash, 20), count: 22)
            out.append(":APA91b")
            out.base64URL(Mix.hash(hash, 21), count: 134)
        }
    }

    /// The user id the app set: `user-<n>`.
    func writeUserID(_ out: inout ByteWriter) {
        out.append("user-")
        out.int(Int64(Mix.hash(hash, 30) % 10_000_000))
    }

    var languageCode: StaticString {
        let entry = DeviceCatalog.languages[language]
        return isIOS ? entry.ios : entry.android
    }

    var modelName: StaticString {
        if isWeb { return isFirefox ? DeviceCatalog.firefoxVersions[model] : DeviceCatalog.chromeVersions[model] }
        return isIOS ? DeviceCatalog.iosModels[model] : DeviceCatalog.androidModels[model]
    }
    var osVersionName: StaticString {
        if isWeb { return DeviceCatalog.desktopSystems[osVersion] }
        return isIOS ? DeviceCatalog.iosVersions[osVersion] : DeviceCatalog.androidVersions[osVersion]
    }
    var appVersionName: StaticString { DeviceCatalog.appVersions[appVersion] }
    /// An Android tablet (the SDK's `device_name` says "Tablet").
    var isTablet: Bool { !isIOS && !isWeb && model == DeviceCatalog.androidTabletModel }
    var sdkVersion: StaticString { isWeb ? "3.2.0" : isIOS ? "7.1.3" : "6.10.0" }
    var screens: [StaticString] { isWeb ? DeviceCatalog.webPages : isIOS ? DeviceCatalog.iosScreens : DeviceCatalog.androidScreens }
}
