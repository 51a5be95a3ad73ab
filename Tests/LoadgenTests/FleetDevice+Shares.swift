@testable import Loadgen

extension FleetDevice {
    /// The device of a fleet with the built-in scenario and these shares (`--onesignal`, `--huawei`, `--web`).
    init(seed: UInt64, index: Int, oneSignalFraction: Double, huaweiFraction: Double = 0, webFraction: Double = 0) {
        var scenario = Scenario.builtIn
        scenario.oneSignalShare = oneSignalFraction
        scenario.huaweiShare = huaweiFraction
        scenario.webShare = webFraction
        self.init(seed: seed, index: index, scenario: scenario)
    }
}
